//! `bench export`: export and import on Postgres, rows per second, beside the bare statements
//! that read and write the same rows. 200,000 rows (`id bigint`, `name text`, `total float8`,
//! `paid bool`, `note text`, a third of the notes null) are read by a keyset source, 500 rows a
//! statement, and exported as CSV (pages of 500 and of 5,000) and as JSON lines into an
//! in-memory object store (the sink's own cost left out: what the export machinery, the steps
//! and the encoding cost), then imported back, part by part, through an `unnest` upsert. The
//! references: `COPY (select ..) TO STDOUT (FORMAT csv)` of the same rows, the same keyset
//! `SELECT` paged through and decoded with nothing written, the same upsert fed from memory
//! in pages of 500, and `COPY .. FROM STDIN (FORMAT csv)` of the export's own bytes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use jobs::export::object_store::memory::InMemory;
use jobs::export::{Cell, Export, ExportReport, Import, ImportReport, ObjectStore, Row};
use jobs::prelude::*;
use jobs::sqlx::{self, postgres::PgConnection, Connection, PgPool};

use super::{exec, fresh, median, rate, runs, url, Table};

/// Rows in the source table.
const ROWS: i64 = 200_000;
/// The rows' own schema (the jobs' schema is `bench_export`).
const DATA: &str = "bench_export_data";
const COLUMNS: [&str; 5] = ["id", "name", "total", "paid", "note"];

/// What the export and import jobs reach: the rows' pool and the sink.
struct Ctx {
    pool: PgPool,
    sink: Arc<dyn ObjectStore>,
}

struct Order {
    id: i64,
    name: String,
    total: f64,
    paid: bool,
    note: Option<String>,
}

type OrderRow = (i64, String, f64, bool, Option<String>);

const PAGE_SQL: &str = "select id, name, total, paid, note from bench_export_data.src \
                        where id > $1 order by id limit $2";

async fn page(pool: &PgPool, after: i64, limit: u32) -> Result<Vec<Order>, JobError> {
    let rows: Vec<OrderRow> = sqlx::query_as(PAGE_SQL)
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(pool)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(id, name, total, paid, note)| Order {
            id,
            name,
            total,
            paid,
            note,
        })
        .collect())
}

/// The export's keyset source.
async fn orders_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Order, i64>, JobError> {
    let ctx = pass.context::<Ctx>()?;
    let rows = page(&ctx.pool, after.unwrap_or(0), limit).await?;
    Ok(Page::keyed(rows, |o| o.id))
}

fn row(o: &Order) -> Row {
    Row::new()
        .set("id", o.id)
        .set("name", &o.name)
        .set("total", o.total)
        .set("paid", o.paid)
        .set("note", o.note.clone())
}

#[input]
struct BenchExportRun {
    prefix: String,
    batch: u32,
    json: bool,
}

#[job(key = "bench-export:{prefix}", tenant = none, retry(attempts = 1))]
async fn bench_export_job(run: Run, input: BenchExportRun) -> Result<ExportReport, JobError> {
    let ctx = run.context::<Ctx>()?;
    let export = if input.json {
        Export::json_lines(COLUMNS)?
    } else {
        Export::csv(COLUMNS)?
    };
    export
        .batch(input.batch)?
        .run(&run, ctx.sink.clone(), &input.prefix, orders_after, row)
        .await
}

const UPSERT_SQL: &str = "insert into bench_export_data.dst (id, name, total, paid, note) \
     select * from unnest($1::bigint[], $2::text[], $3::float8[], $4::bool[], $5::text[]) \
     on conflict (id) do update set name = excluded.name, total = excluded.total, \
     paid = excluded.paid, note = excluded.note";

/// The import's upsert: one `unnest` statement per part. CSV reads back as text.
async fn upsert(pass: Pass, rows: Vec<Row>) -> Result<(), JobError> {
    let ctx = pass.context::<Ctx>()?;
    let orders = rows
        .iter()
        .map(|r| {
            let cell = |c: &str| r.get(c).cloned().unwrap_or(Cell::Null);
            Ok(Order {
                id: cell("id").as_i64().ok_or_else(|| bad("id"))?,
                name: cell("name").as_text().unwrap_or_default().to_string(),
                total: cell("total").as_f64().ok_or_else(|| bad("total"))?,
                paid: cell("paid").as_bool().ok_or_else(|| bad("paid"))?,
                note: cell("note").as_text().map(str::to_string),
            })
        })
        .collect::<Result<Vec<_>, JobError>>()?;
    upsert_orders(&ctx.pool, orders).await
}

fn bad(column: &str) -> JobError {
    JobError::terminal(format!("the column `{column}` does not parse"))
}

async fn upsert_orders(pool: &PgPool, orders: Vec<Order>) -> Result<(), JobError> {
    let mut ids = Vec::with_capacity(orders.len());
    let mut names = Vec::with_capacity(orders.len());
    let mut totals = Vec::with_capacity(orders.len());
    let mut paids = Vec::with_capacity(orders.len());
    let mut notes = Vec::with_capacity(orders.len());
    for o in orders {
        ids.push(o.id);
        names.push(o.name);
        totals.push(o.total);
        paids.push(o.paid);
        notes.push(o.note);
    }
    sqlx::query(UPSERT_SQL)
        .bind(ids)
        .bind(names)
        .bind(totals)
        .bind(paids)
        .bind(notes)
        .execute(pool)
        .await?;
    Ok(())
}

#[input]
struct BenchImportRun {
    prefix: String,
}

#[job(key = "bench-import:{prefix}", tenant = none, retry(attempts = 1))]
async fn bench_import_job(run: Run, input: BenchImportRun) -> Result<ImportReport, JobError> {
    let ctx = run.context::<Ctx>()?;
    Import::new(COLUMNS)?
        .run(&run, ctx.sink.clone(), &input.prefix, upsert)
        .await
}

/// The source table, filled once; the destination emptied before each import.
async fn prepare(pool: &PgPool) {
    exec(pool, &format!("drop schema if exists {DATA} cascade")).await;
    exec(pool, &format!("create schema {DATA}")).await;
    exec(
        pool,
        &format!(
            "create table {DATA}.src (id bigint primary key, name text not null, \
             total float8 not null, paid bool not null, note text)"
        ),
    )
    .await;
    exec(
        pool,
        &format!(
            "insert into {DATA}.src select g, 'customer ' || g || ', \"vip\"', g * 1.25, \
             g % 3 = 0, case when g % 3 = 1 then null else 'note ' || g end \
             from generate_series(1, {ROWS}) g"
        ),
    )
    .await;
    exec(pool, &format!("analyze {DATA}.src")).await;
}

async fn empty_destination(pool: &PgPool) {
    exec(pool, &format!("drop table if exists {DATA}.dst")).await;
    exec(
        pool,
        &format!("create table {DATA}.dst (like {DATA}.src including all)"),
    )
    .await;
}

/// Runs one job to its end on a worker of its own; answers the time from enqueue to settle.
async fn run_one<J: Job>(jobs: &Jobs, ctx: &Arc<Ctx>, input: J::Input) -> Duration {
    let worker = jobs
        .worker()
        .concurrency(1)
        .context(ctx.clone())
        .build()
        .expect("worker");
    let started = Instant::now();
    let queued = jobs.enqueue::<J>(input).await.expect("enqueue");
    let running = worker.start();
    let deadline = Instant::now() + Duration::from_secs(600);
    while {
        let stats = worker.stats();
        stats.completed + stats.dead_lettered < 1
    } && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let took = started.elapsed();
    running.shutdown().await;
    let job = jobs.job(queued.id).await.expect("read").expect("the job");
    assert_eq!(
        job.state,
        JobState::Done,
        "{}: {:?}",
        J::DESCRIPTOR.name,
        job.last_error
    );
    took
}

pub async fn export_and_import(table: &mut Table) -> Result<(), JobError> {
    let jobs = Jobs::new(fresh("bench_export").await?);
    let pool = PgPool::connect(&url()).await?;
    prepare(&pool).await;
    let n = ROWS as usize;
    let (mut copy, mut select, mut csv, mut csv_big, mut json) =
        (vec![], vec![], vec![], vec![], vec![]);
    let (mut import, mut bare_upsert, mut copy_in) = (vec![], vec![], vec![]);
    let mut export_bytes = 0;
    for round in 0..runs() {
        // COPY TO STDOUT, CSV, read to the end.
        let mut conn = PgConnection::connect(&url()).await?;
        let started = Instant::now();
        let mut stream = conn
            .copy_out_raw(&format!(
                "copy (select id, name, total, paid, note from {DATA}.src order by id) \
                 to stdout with (format csv, header)"
            ))
            .await?;
        let mut copied = Vec::new();
        while let Some(chunk) = stream.next().await {
            copied.extend_from_slice(&chunk?);
        }
        drop(stream);
        copy.push(rate(n, started.elapsed()));

        // The keyset SELECT the source runs, paged through, nothing written.
        let started = Instant::now();
        let (mut after, mut read) = (0, 0);
        loop {
            let rows = page(&pool, after, 500).await?;
            read += rows.len();
            match rows.last() {
                Some(last) if rows.len() == 500 => after = last.id,
                _ => break,
            }
        }
        assert_eq!(read, n);
        select.push(rate(n, started.elapsed()));

        let sink: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let ctx = Arc::new(Ctx {
            pool: pool.clone(),
            sink: sink.clone(),
        });
        for (batch, json_lines, into) in [
            (500, false, &mut csv),
            (5_000, false, &mut csv_big),
            (500, true, &mut json),
        ] {
            let input = BenchExportRun {
                prefix: format!("r{round}/b{batch}/j{json_lines}"),
                batch,
                json: json_lines,
            };
            let took = run_one::<BenchExportJob>(&jobs, &ctx, input).await;
            into.push(rate(n, took));
        }

        // The import of the CSV export of pages of 500.
        empty_destination(&pool).await;
        let input = BenchImportRun {
            prefix: format!("r{round}/b500/jfalse"),
        };
        let took = run_one::<BenchImportJob>(&jobs, &ctx, input).await;
        import.push(rate(n, took));
        let imported: i64 = sqlx::query_scalar("select count(*) from bench_export_data.dst")
            .fetch_one(&pool)
            .await?;
        assert_eq!(imported, ROWS);

        // The same upsert fed from memory, pages of 500.
        empty_destination(&pool).await;
        let mut all = Vec::with_capacity(n);
        let mut after = 0;
        loop {
            let rows = page(&pool, after, 5_000).await?;
            let full = rows.len() == 5_000;
            after = rows.last().map_or(after, |o| o.id);
            all.extend(rows);
            if !full {
                break;
            }
        }
        let started = Instant::now();
        let mut rest = all.into_iter().peekable();
        while rest.peek().is_some() {
            let chunk: Vec<Order> = rest.by_ref().take(500).collect();
            upsert_orders(&pool, chunk).await?;
        }
        bare_upsert.push(rate(n, started.elapsed()));

        // COPY FROM STDIN of the export's own bytes (the parts joined: one CSV file).
        empty_destination(&pool).await;
        let mut whole = Vec::new();
        for part in 0u64.. {
            let key = jobs::export::part_key(
                &format!("r{round}/b500/jfalse"),
                part,
                jobs::export::Format::Csv,
            );
            let Ok(read) = jobs::export::object_store::ObjectStoreExt::get(
                &*sink,
                &jobs::export::object_store::path::Path::from(key),
            )
            .await
            else {
                break;
            };
            whole.extend_from_slice(&read.bytes().await.expect("part"));
        }
        export_bytes = whole.len();
        assert!(whole.len().abs_diff(copied.len()) < copied.len() / 10);
        let started = Instant::now();
        let mut copy_in_stream = conn
            .copy_in_raw(&format!(
                "copy {DATA}.dst from stdin with (format csv, header)"
            ))
            .await?;
        copy_in_stream.send(whole).await?;
        copy_in_stream.finish().await?;
        copy_in.push(rate(n, started.elapsed()));
        conn.close().await?;
    }
    let f = |v: Vec<f64>| format!("{:.0}", median(v));
    table.add("export: bare COPY TO STDOUT (csv) rows/s", f(copy));
    table.add(
        "export: bare keyset SELECT, pages of 500, rows/s",
        f(select),
    );
    table.add("export: CSV, pages of 500, rows/s", f(csv));
    table.add("export: CSV, pages of 5,000, rows/s", f(csv_big));
    table.add("export: JSON lines, pages of 500, rows/s", f(json));
    table.add("import: bare COPY FROM STDIN (csv) rows/s", f(copy_in));
    table.add(
        "import: bare unnest upsert, pages of 500, rows/s",
        f(bare_upsert),
    );
    table.add("import: CSV parts of 500, unnest upsert, rows/s", f(import));
    table.add(
        "export: CSV bytes for 200,000 rows",
        export_bytes.to_string(),
    );
    Ok(())
}
