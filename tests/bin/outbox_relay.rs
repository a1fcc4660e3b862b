//! An outbox relay process the outbox kill test starts and SIGKILLs: it relays the Postgres
//! outbox in `OUTBOX_SCHEMA` of `DATABASE_URL` into the job store at `TARGET_URL`, `BATCH`
//! rows a pass. With `STALL_ON_MARK=n`, its n-th mark of a published batch never returns (it
//! prints `stalled` first): the process then sits between a publish and its mark, where the
//! test kills it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use jobs::clock::Timestamp;
use jobs::driver::caller_tx::CallerConn;
use jobs::driver::outbox::*;
use jobs::driver::postgres::PostgresOutbox;
use jobs::driver::{EnqueueRequest, JobId, WakeReceiver};
use jobs::outbox::OutboxRelay;
use jobs::{JobError, Jobs};

/// The Postgres outbox, with a mark that can stall.
struct Stalling {
    inner: PostgresOutbox,
    stall_on: usize,
    marks: AtomicUsize,
}

#[async_trait]
impl OutboxStore for Stalling {
    fn name(&self) -> &'static str {
        "postgres"
    }
    async fn outbox_stage(&self, c: CallerConn<'_>, r: &EnqueueRequest) -> Result<(), JobError> {
        self.inner.outbox_stage(c, r).await
    }
    async fn outbox_claim(&self, p: &OutboxClaimParams) -> Result<Vec<OutboxRecord>, JobError> {
        self.inner.outbox_claim(p).await
    }
    async fn outbox_published(
        &self,
        s: &OutboxSettle<'_>,
        rows: &[OutboxPublished],
    ) -> Result<u64, JobError> {
        if self.marks.fetch_add(1, Ordering::SeqCst) + 1 == self.stall_on {
            println!("stalled");
            std::future::pending::<()>().await;
        }
        self.inner.outbox_published(s, rows).await
    }
    async fn outbox_release(
        &self,
        s: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError> {
        self.inner.outbox_release(s, ids, failed).await
    }
    async fn outbox_refused(
        &self,
        s: &OutboxSettle<'_>,
        id: JobId,
        code: &str,
    ) -> Result<u64, JobError> {
        self.inner.outbox_refused(s, id, code).await
    }
    async fn outbox_stats(&self) -> Result<OutboxStats, JobError> {
        self.inner.outbox_stats().await
    }
    async fn outbox_purge(&self, before: Timestamp, limit: u32) -> Result<u64, JobError> {
        self.inner.outbox_purge(before, limit).await
    }
    async fn outbox_wake(&self) -> Result<Option<WakeReceiver>, JobError> {
        self.inner.outbox_wake().await
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is required"))
}

#[tokio::main]
async fn main() {
    let pool = jobs::sqlx::postgres::PgPoolOptions::new()
        .max_connections(4)
        .connect(&env("DATABASE_URL"))
        .await
        .expect("the outbox's database answers");
    let outbox = PostgresOutbox::new(pool, &env("OUTBOX_SCHEMA")).expect("a schema name");
    let store = Stalling {
        inner: outbox,
        stall_on: std::env::var("STALL_ON_MARK")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0),
        marks: AtomicUsize::new(0),
    };
    let target = jobs::driver::url::connect(&env("TARGET_URL"), Some(&env("TARGET_SCHEMA")))
        .await
        .expect("the target answers");
    let jobs = Jobs::with_clock(target, Arc::new(jobs::clock::SystemClock));
    let relay = OutboxRelay::builder(store, &jobs)
        .batch(env("BATCH").parse().expect("a batch size"))
        .holder(env("HOLDER"))
        .build()
        .expect("relay settings");
    let _handle = relay.start();
    println!("ready");
    std::future::pending::<()>().await;
}
