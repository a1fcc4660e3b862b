//! The transactional outbox: a job staged in the application's own database, in the same
//! transaction as the business write, and a relay that publishes committed rows to whichever
//! store runs the jobs.
//!
//! Three parts, installed together:
//!
//! 1. the `x_outbox` table in the app's database (a Postgres or SQLite migration; the jobs'
//!    own migrations ship it, and [`PostgresOutbox::install`](crate::driver::postgres::PostgresOutbox::install)
//!    creates it in an app database of its own);
//! 2. the client staging through it: [`Jobs::with_outbox`](crate::Jobs::with_outbox), after
//!    which `enqueue_in(&mut tx, input)` (the typed handle's `SendWelcome::enqueue_in` too)
//!    stages the job on the caller's transaction instead of writing it;
//! 3. the relay ([`OutboxRelay`]), which claims committed rows in stage order as a lease and
//!    publishes them through the job store's own batched enqueue.
//!
//! ```
//! use jobs::prelude::*;
//! use jobs::driver::MemoryOutbox;
//! use jobs::outbox::{OutboxMode, OutboxRelay};
//!
//! #[input]
//! pub struct Signup { pub user_id: u64 }
//!
//! #[job(key = "welcome:{user_id}", tenant = none)]
//! async fn send_welcome(_run: Run, _input: Signup) -> Result<(), JobError> { Ok(()) }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), JobError> {
//! let outbox = MemoryOutbox::new(); // in an app: PostgresOutbox or SqliteOutbox
//! let jobs = Jobs::memory().with_outbox(outbox.clone(), OutboxMode::Required);
//!
//! let mut tx = outbox.begin(); // in an app: `pool.begin().await?`
//! let staged = SendWelcome::enqueue_in(&jobs, &mut tx, Signup { user_id: 7 }).await?;
//! tx.commit();
//!
//! let relay = OutboxRelay::builder(outbox, &jobs).build()?;
//! assert_eq!(relay.pass().await?.published, 1);
//! assert!(jobs.job(staged.id).await?.is_some()); // the staged id is the job's id
//! # Ok(()) }
//! ```
//!
//! A staged enqueue answers the job's real ids (the row's id is the job's, its run id is
//! allocated at stage); `deduped` is known only at publish, so a staged enqueue always answers
//! `deduped = false`. One whose key a live job holds when it is published creates nothing:
//! give runs that must each happen their own key (a request id).

mod purge;
mod relay;

pub use purge::OutboxPurge;
pub use relay::{
    OutboxRelay, OutboxRelayBuilder, PassReport, RelayHandle, DEFAULT_OUTBOX_BATCH,
    DEFAULT_OUTBOX_IDLE_MAX, DEFAULT_OUTBOX_IDLE_MAX_WITHOUT_WAKE, DEFAULT_OUTBOX_INTERVAL,
    DRAIN_BATCHES,
};

pub use crate::driver::outbox::{OutboxLease, OutboxStats, DEFAULT_OUTBOX_CLAIM_LEASE};
pub use crate::enqueue::OutboxMode;
