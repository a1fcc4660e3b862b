//! Storage: the port every driver implements, and the drivers.
//!
//! - [`port`]: [`JobDriver`] and its optional sub-ports (leases, the scheduler's store, the
//!   operator surface, the backfill pass store, the double-entry book, the webhook ledger, a
//!   caller's transaction), with the records they exchange. Its modules are re-exported here under
//!   their own names (`jobs::driver::lease`, `jobs::driver::introspect`, ...).
//! - `memory`: every port in process memory ([`MemoryDriver`]), for tests and demos.
//! - [`postgres`]: every port on PostgreSQL ([`PostgresDriver`]), the store a fleet shares;
//!   its statements are `.sql` files beside it.
//! - [`sqlite`]: every port on one SQLite file ([`SqliteDriver`]), durable with no server, for
//!   one host (feature `sqlite`).
//!
//! - [`redis`]: every port on a Redis server or a Redis Cluster ([`RedisDriver`]), one Lua
//!   script per change, each in one hash slot (feature `redis`).
//!
//! - [`url`]: the driver a URL names (`memory:`, `sqlite://`, `postgres://`, or a scheme a
//!   driver outside this crate registers with [`register_driver_scheme!`](crate::register_driver_scheme)).
//!
//! The conformance suite every driver must pass is [`crate::conformance`] (feature
//! `conformance`).

mod memory;
pub mod port;
#[cfg(feature = "postgres")]
pub mod postgres;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "sql")]
mod sql_rows;
#[cfg(feature = "sql")]
mod sql_types;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(test)]
pub(crate) mod test_records;
pub mod url;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod wake_payload;

#[cfg(feature = "redis")]
pub use self::redis::RedisDriver;
pub use memory::{
    MemoryBook, MemoryDriver, MemoryLeaseStore, MemoryOutbox, MemoryOutboxTx, MemoryWebhookLedger,
    MEMORY_LEDGER_RING,
};
pub(crate) use port::records;
pub use port::*;
#[cfg(feature = "postgres")]
pub use postgres::{PgPartitions, PostgresBook, PostgresDriver};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteBook, SqliteDriver};
