//! `jobs::export` on Postgres, with parts on local files: a worker process SIGKILLed mid-export
//! and another one resuming on the page it stopped at, rewriting that part only; then the
//! import of the files back into a table, on the same store.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use jobs::driver::PostgresDriver;
use jobs::export::object_store::local::LocalFileSystem;
use jobs::export::{Cell, ExportReport, Import, ImportReport, Manifest, ObjectStore, Row};
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe};

use crate::support::pg;
use crate::support::sqlite::TempDir;

#[input]
struct ExportTarget {
    prefix: String,
}

/// The same declaration the worker process runs (`tests/bin/backfill_worker.rs`); only its
/// name and input matter here.
#[job(key = "items-export:{prefix}", tenant = none)]
async fn export_items(_run: Run, _input: ExportTarget) -> Result<ExportReport, JobError> {
    unreachable!("the worker process runs this export")
}

struct Db {
    pool: sqlx::PgPool,
    schema: String,
    sink: Arc<dyn ObjectStore>,
}

async fn copy_back(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let db = pass.context::<Db>()?;
    let ids: Vec<i64> = rows
        .iter()
        .filter_map(|r| r.get("id").and_then(Cell::as_i64))
        .collect();
    let sql = format!(
        "insert into {}.copied (id) select unnest($1::bigint[]) on conflict do nothing",
        db.schema
    );
    sqlx::query(AssertSqlSafe(sql))
        .bind(ids)
        .execute(&db.pool)
        .await?;
    Ok(())
}

#[job(key = "items-import:{prefix}", tenant = none)]
async fn import_items(run: Run, input: ExportTarget) -> Result<ImportReport, JobError> {
    let db = run.context::<Db>()?;
    Import::new(["id"])?
        .run(&run, db.sink.clone(), &input.prefix, copy_back)
        .await
}

fn start_worker(schema: &str, dir: &TempDir) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_backfill-worker"))
        .env("DATABASE_URL", pg::database_url())
        .env("JOBS_SCHEMA", schema)
        .env("EXPORT_DIR", dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the worker starts");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("piped stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("the worker reports");
    assert_eq!(line.trim(), "ready");
    child
}

async fn scalar(pool: &sqlx::PgPool, sql: String) -> i64 {
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Polls `condition` on the wall clock (real processes), up to `bound`.
async fn wait_until<F, Fut>(bound: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + bound;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_export_resumes_on_its_page_in_another_process_and_imports_back() {
    let (pool, schema) = pg::schema("export_pg_kill").await;
    let dir = TempDir::new("export-pg-kill");
    for ddl in [
        format!("create table {schema}.items (id bigint primary key, label text)"),
        format!("insert into {schema}.items (id) select g from generate_series(1, 2000) g"),
        format!("create table {schema}.page_runs (page bigint not null, pid int not null)"),
        format!("create table {schema}.export_reads (page bigint not null, pid int not null)"),
        format!("create table {schema}.copied (id bigint primary key)"),
    ] {
        sqlx::query(AssertSqlSafe(ddl))
            .execute(&pool)
            .await
            .unwrap();
    }
    let jobs = Jobs::new(PostgresDriver::new(pool.clone(), &schema).unwrap());
    let queued = ExportItems::enqueue(
        &jobs,
        ExportTarget {
            prefix: "items".into(),
        },
    )
    .await
    .unwrap();

    // 20 pages of 100 at 20 pages/s: about a second. Kill it a third of the way in.
    let mut first = start_worker(&schema, &dir);
    wait_until(Duration::from_secs(30), "seven pages", || async {
        scalar(
            &pool,
            format!("select count(distinct page) from {schema}.export_reads"),
        )
        .await
            >= 7
    })
    .await;
    first.kill().expect("SIGKILL the first worker");
    first.wait().expect("reap it");
    let first_pid = scalar(
        &pool,
        format!("select pid::bigint from {schema}.export_reads where page = 0"),
    )
    .await;
    let read_by_first = scalar(
        &pool,
        format!("select count(distinct page) from {schema}.export_reads"),
    )
    .await;
    assert!(read_by_first < 20, "killed mid-export");

    let mut second = start_worker(&schema, &dir);
    wait_until(Duration::from_secs(60), "the export to finish", || async {
        jobs.job(queued.id).await.unwrap().unwrap().state == JobState::Done
    })
    .await;
    second.kill().expect("stop the second worker");
    second.wait().expect("reap it");

    // The second process started on the first page the first had not checkpointed: every
    // page read once, but at most the one in flight at the kill, read by both.
    let reads = scalar(&pool, format!("select count(*) from {schema}.export_reads")).await;
    let twice = scalar(
        &pool,
        format!(
            "select count(*) from (select page from {schema}.export_reads group by page \
             having count(*) > 1) r"
        ),
    )
    .await;
    assert!(twice <= 1, "{twice} pages read twice");
    // 20 full pages, then the empty read that ends the export without a part.
    assert!(reads <= 22, "{reads} reads for 21 pages");
    let resumed_on = scalar(
        &pool,
        format!("select min(page) from {schema}.export_reads where pid <> {first_pid}"),
    )
    .await;
    assert!(
        (read_by_first - 1..=read_by_first).contains(&resumed_on),
        "resumed on page {resumed_on}, the first process read {read_by_first}"
    );
    let job = jobs.job(queued.id).await.unwrap().unwrap();
    assert_eq!(job.attempt, 2, "the killed attempt counts");

    // The files: 20 parts and the manifest; `cat part-*` is one CSV of the 2,000 ids.
    let folder = dir.path().join("items");
    let mut files: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    assert_eq!(files.len(), 21, "{files:?}");
    let manifest: Manifest =
        serde_json::from_slice(&std::fs::read(folder.join("manifest.json")).unwrap()).unwrap();
    assert_eq!((manifest.parts, manifest.rows), (20, 2_000));
    let cat: String = files
        .iter()
        .filter(|f| f.starts_with("part-"))
        .map(|f| std::fs::read_to_string(folder.join(f)).unwrap())
        .collect();
    let expected: String = std::iter::once("id\n".to_string())
        .chain((1..=2_000).map(|id| format!("{id}\n")))
        .collect();
    assert_eq!(cat, expected);

    // And back into a table, through this process' own worker.
    let db = Arc::new(Db {
        pool: pool.clone(),
        schema: schema.clone(),
        sink: Arc::new(LocalFileSystem::new_with_prefix(dir.path()).unwrap()),
    });
    let worker = jobs
        .worker()
        .poll_interval(Duration::from_millis(20))
        .context(db)
        .build()
        .unwrap();
    let running = worker.start();
    let imported = ImportItems::enqueue(
        &jobs,
        ExportTarget {
            prefix: "items".into(),
        },
    )
    .await
    .unwrap();
    wait_until(Duration::from_secs(60), "the import to finish", || async {
        jobs.job(imported.id).await.unwrap().unwrap().state == JobState::Done
    })
    .await;
    running.shutdown().await;
    assert_eq!(
        scalar(&pool, format!("select count(*) from {schema}.copied")).await,
        2_000
    );
    println!(
        "export kill test: {read_by_first} pages read before SIGKILL, resumed on page {resumed_on}, {reads} reads for 21 pages"
    );
}
