//! An outbox relay process the outbox kill test starts and SIGKILLs: it relays the Postgres
//! outbox in `OUTBOX_SCHEMA` of `DATABASE_URL` into the job store at `TARGET_URL`, `BATCH`
//! rows a pass. With `STALL_ON_MARK=n`, its n-th mark of a published batch never returns (it
//! prints `stalled` first): the process then sits between a publish and its mark, where the
//! test kills it.

use std::sync::Arc;

use jobs::driver::postgres::PostgresOutbox;
use jobs::outbox::OutboxRelay;
use jobs::testing::OutboxProbe;
use jobs::Jobs;

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
    let stall_on = std::env::var("STALL_ON_MARK")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let store = OutboxProbe::new(outbox).stall_on_mark(stall_on);
    let target = jobs::driver::url::connect(&env("TARGET_URL"), Some(&env("TARGET_SCHEMA")))
        .await
        .expect("the target answers");
    let jobs = Jobs::with_clock(target, Arc::new(jobs::clock::SystemClock));
    let relay = OutboxRelay::builder(store.clone(), &jobs)
        .batch(env("BATCH").parse().expect("a batch size"))
        .holder(env("HOLDER"))
        .build()
        .expect("relay settings");
    let stalled = store.stalled();
    let _handle = relay.start();
    println!("ready");
    stalled.await;
    println!("stalled");
    std::future::pending::<()>().await;
}
