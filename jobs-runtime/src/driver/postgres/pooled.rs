//! A connection or a transaction from the pool, its wait boxed.
//!
//! sqlx's `Pool::acquire` (and so `Pool::begin`) is a future of about 8.6 KB. Awaited inline,
//! it makes every operation that may take a pooled connection carry it in its own state, and a
//! port call's future (boxed by `async_trait`) is copied whole into its box on every call: an
//! enqueue that used its pinned connection and never acquired one copied 9 KB (measured: 9,150
//! instructions of `memcpy` a call, a fifth of the client's work). Boxed here, the wait is
//! allocated only when a call does take a connection from the pool.

use sqlx::pool::PoolConnection;
use sqlx::postgres::PgPool;
use sqlx::{Postgres, Transaction};

/// A connection from `pool`.
pub(super) async fn acquire(pool: &PgPool) -> Result<PoolConnection<Postgres>, sqlx::Error> {
    Box::pin(pool.acquire()).await
}

/// A transaction on a connection from `pool`.
pub(super) async fn begin(pool: &PgPool) -> Result<Transaction<'static, Postgres>, sqlx::Error> {
    Box::pin(pool.begin()).await
}

#[cfg(test)]
mod tests {
    use sqlx::postgres::PgPoolOptions;

    use crate::driver::test_records::{claim_one, request};
    use crate::driver::{JobDriver, PostgresDriver};

    /// The largest future a hot port call may make: a pool's wait inline is about 8.6 KB.
    const HOT_CALL_BYTES: usize = 2048;

    /// The enqueue and the claim, as boxed by the port, stay small: neither carries a pool's
    /// wait inline (a lazy pool: nothing is dialled, nothing is polled).
    #[tokio::test]
    async fn the_hot_port_calls_carry_no_pool_wait_inline() {
        let pool = PgPoolOptions::new()
            .connect_lazy("postgres://127.0.0.1:1/unused")
            .expect("a lazy pool");
        let driver = PostgresDriver::new(pool, "future_sizes").expect("schema");
        let now = chrono::Utc::now();
        let request = request(now);
        let claim = claim_one(now);
        let sizes = [
            ("job_enqueue", size_of_val(&*driver.job_enqueue(&request))),
            (
                "job_enqueue_many",
                size_of_val(&*driver.job_enqueue_many(std::slice::from_ref(&request))),
            ),
            ("job_claim", size_of_val(&*driver.job_claim(&claim))),
        ];
        for (call, bytes) in sizes {
            assert!(
                bytes <= HOT_CALL_BYTES,
                "{call}'s future is {bytes} bytes, over {HOT_CALL_BYTES}: box the wait that made it large"
            );
        }
    }
}
