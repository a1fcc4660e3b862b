//! A worker process for the backfill and export kill tests, on the schema named by
//! `JOBS_SCHEMA`: one backfill over `<schema>.items`, which records every page its handler runs
//! in `<schema>.page_runs`, and one export of the same rows into the local folder named by
//! `EXPORT_DIR` (when set), whose source records every page it reads in
//! `<schema>.export_reads`, so a test can SIGKILL it mid-pass and count what ran again.

use std::sync::Arc;
use std::time::Duration;

use jobs::export::object_store::{local::LocalFileSystem, memory::InMemory};
use jobs::export::{Export, ExportReport, ObjectStore, Row as ExportRow};

use jobs::driver::PostgresDriver;
use jobs::prelude::*;
use jobs::sqlx::{self, AssertSqlSafe, Row};

struct Db {
    pool: sqlx::PgPool,
    schema: String,
    sink: Arc<dyn ObjectStore>,
}

#[derive(Debug)]
struct Item {
    id: i64,
}

/// Keyset over the primary key: one statement per page, never OFFSET.
async fn items_after(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Item, i64>, JobError> {
    let db = pass.context::<Db>()?;
    let sql = format!(
        "select id from {}.items where id > $1 order by id limit $2",
        db.schema
    );
    let rows = sqlx::query(AssertSqlSafe(sql))
        .bind(after.unwrap_or(0))
        .bind(i64::from(limit))
        .fetch_all(&db.pool)
        .await?;
    let items = rows
        .iter()
        .map(|r| {
            Ok(Item {
                id: r.try_get("id")?,
            })
        })
        .collect::<Result<Vec<_>, sqlx::Error>>()?;
    Ok(Page::keyed(items, |item| item.id))
}

#[backfill(name = "items.label", tenant = none, source = items_after, batch = 100, rate = 20.0)]
async fn label_items(pass: Pass, rows: Vec<Item>) -> Result<(), JobError> {
    let db = pass.context::<Db>()?;
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    let update = format!(
        "update {}.items set label = 'item-' || id where id = any($1)",
        db.schema
    );
    sqlx::query(AssertSqlSafe(update))
        .bind(&ids)
        .execute(&db.pool)
        .await?;
    let record = format!(
        "insert into {}.page_runs (page, pid) values ($1, $2)",
        db.schema
    );
    sqlx::query(AssertSqlSafe(record))
        .bind(pass.page() as i64)
        .bind(std::process::id() as i32)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// The export's source: the same keyset read, each page's read recorded with the process id.
async fn items_read(
    pass: Pass,
    after: Option<i64>,
    limit: u32,
) -> Result<Page<Item, i64>, JobError> {
    let db = pass.context::<Db>()?;
    let record = format!(
        "insert into {}.export_reads (page, pid) values ($1, $2)",
        db.schema
    );
    sqlx::query(AssertSqlSafe(record))
        .bind(pass.page() as i64)
        .bind(std::process::id() as i32)
        .execute(&db.pool)
        .await?;
    items_after(pass, after, limit).await
}

#[input]
struct ExportTarget {
    prefix: String,
}

#[job(key = "items-export:{prefix}", tenant = none)]
async fn export_items(run: Run, input: ExportTarget) -> Result<ExportReport, JobError> {
    let db = run.context::<Db>()?;
    Export::csv(["id"])?
        .batch(100)?
        .rate(20.0)?
        .run(
            &run,
            db.sink.clone(),
            &input.prefix,
            items_read,
            |item: &Item| ExportRow::new().set("id", item.id),
        )
        .await
}

#[tokio::main]
async fn main() -> Result<(), JobError> {
    let url = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let schema = std::env::var("JOBS_SCHEMA").expect("JOBS_SCHEMA");
    let driver = PostgresDriver::connect(&url).await?.with_schema(&schema)?;
    let sink: Arc<dyn ObjectStore> = match std::env::var("EXPORT_DIR") {
        Ok(dir) => Arc::new(LocalFileSystem::new_with_prefix(dir).expect("the export folder")),
        Err(_) => Arc::new(InMemory::new()),
    };
    let db = Db {
        pool: driver.pool().clone(),
        schema,
        sink,
    };
    let jobs = Jobs::new(driver);
    let worker = jobs
        .worker()
        .visibility_timeout(Duration::from_millis(1_000))
        .poll_interval(Duration::from_millis(50))
        .idle_poll_max(Duration::from_millis(200))
        .context(Arc::new(db))
        .build()?;
    let _running = worker.start();
    println!("ready");
    std::future::pending::<()>().await;
    Ok(())
}
