//! A connection kept out of the pool for one sequential caller: the enqueue path, a worker's
//! claims, the completer's acks.
//!
//! sqlx pings every connection it takes back into its pool, a round trip per statement that
//! the caller's next statement may wait behind (measured: a bare INSERT through a pool ran at
//! 0.8x the same INSERT on one connection). The hot path's callers are sequential (one claim
//! loop, one completer), so each gets one connection of its own and keeps it. A second caller
//! that finds it busy takes a pooled connection as before, so nothing ever waits on the pin.
//!
//! A pinned connection idle for longer than [`IDLE_CHECK`] is pinged before use, as the pool
//! would; one that fails a statement in the driver is dropped (it may be broken), and the next
//! caller dials afresh through the pool. A single enqueue that met a dead pinned connection is
//! sent once more on a fresh one (the driver's `job_enqueue`), so a server restart costs its
//! callers nothing.
//!
//! A pinned connection prepares its statements afresh every [`REPLAN_EVERY`] (one round trip to
//! close them, then each is parsed and planned again at its next use), and sooner while it is
//! young: 1, 2, 4, 8 and 16 s after it was dialled, so the plans a fresh database's first
//! statements made on an empty table last a second, not half a minute of a growing one (unless
//! `PostgresDriver::replan_every` set one period). Each statement is planned
//! once per session (`SESSION_SETTINGS`), and a plan made while the table was small (on a table
//! analyzed nearly empty: sequential scans) would otherwise stay until the server invalidates
//! it, which with autovacuum off never happens, and the pinned connections live as long as the
//! driver.

use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgConnection, PgPool};
use sqlx::{Connection, Postgres};

use crate::error::{ErrorCode, JobError};

/// A pinned connection idle this long is pinged before it is trusted again.
pub(crate) const IDLE_CHECK: Duration = Duration::from_secs(10);

/// A pinned connection's statements are prepared (and so planned) afresh this often.
pub const REPLAN_EVERY: Duration = Duration::from_secs(30);

/// How long a connection whose statements were prepared afresh `replans` times keeps its plans
/// on the young schedule: doubling from 1 s, then `every`.
fn young_replan_after(replans: u32, every: Duration) -> Duration {
    Duration::from_secs(1u64 << replans.min(16)).min(every)
}

/// One pinned connection slot.
#[derive(Debug)]
pub(crate) struct Pinned {
    slot: tokio::sync::Mutex<Option<Held>>,
    replan_every: Duration,
    /// Whether a young connection prepares afresh sooner (the default's doubling schedule).
    young_sooner: bool,
}

#[derive(Debug)]
pub(crate) struct Held {
    conn: PgConnection,
    last_used: Instant,
    planned_since: Instant,
    /// How often its statements were prepared afresh.
    replans: u32,
}

/// A connection lent for one operation: the pinned one, or a pooled one when the pin is busy.
pub(crate) enum Lease<'a> {
    Pinned(tokio::sync::MutexGuard<'a, Option<Held>>),
    Pooled(PoolConnection<Postgres>),
}

impl Pinned {
    /// An empty slot whose connection prepares its statements afresh every `every`, and sooner
    /// while it is young when `young_sooner`.
    pub(crate) fn replanned_every(every: Duration, young_sooner: bool) -> Self {
        Pinned {
            slot: tokio::sync::Mutex::default(),
            replan_every: every,
            young_sooner,
        }
    }

    /// How long the connection keeps the plans it made after `replans` fresh preparations.
    fn replan_after(&self, replans: u32) -> Duration {
        if self.young_sooner {
            young_replan_after(replans, self.replan_every)
        } else {
            self.replan_every
        }
    }

    /// The pinned connection when it is free (dialled through `pool` on first use or after a
    /// failure, and given `TCP_NODELAY` there when `set_nodelay`), else a pooled one.
    pub(crate) async fn lease<'a>(
        &'a self,
        pool: &PgPool,
        set_nodelay: bool,
    ) -> Result<Lease<'a>, sqlx::Error> {
        let Ok(mut guard) = self.slot.try_lock() else {
            return Ok(Lease::Pooled(super::pooled::acquire(pool).await?));
        };
        if let Some(held) = guard.as_mut() {
            if held.last_used.elapsed() > IDLE_CHECK && held.conn.ping().await.is_err() {
                *guard = None;
            } else if held.planned_since.elapsed() >= self.replan_after(held.replans) {
                if held.conn.clear_cached_statements().await.is_err() {
                    *guard = None;
                } else {
                    held.planned_since = Instant::now();
                    held.replans = held.replans.saturating_add(1);
                }
            }
        }
        if guard.is_none() {
            // Detached: the pool no longer counts it, and never pings it on a return.
            let mut conn = super::pooled::acquire(pool).await?.detach();
            if set_nodelay {
                super::nodelay::apply(&mut conn, pool.connect_options().get_port()).await;
            }
            *guard = Some(Held {
                conn,
                last_used: Instant::now(),
                planned_since: Instant::now(),
                replans: 0,
            });
        }
        Ok(Lease::Pinned(guard))
    }
}

impl Lease<'_> {
    /// Whether this is the pinned connection (not a pooled one).
    pub(crate) fn is_pinned(&self) -> bool {
        matches!(self, Lease::Pinned(_))
    }

    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut PgConnection {
        match self {
            Lease::Pinned(guard) => match guard.as_mut() {
                Some(held) => &mut held.conn,
                None => unreachable!("a pinned lease always holds a connection"),
            },
            Lease::Pooled(conn) => conn,
        }
    }

    /// Ends the lease. A pinned connection is kept unless the operation failed in the driver
    /// (a transport or database error may have left it broken); a refusal decided from a
    /// good answer, such as a duplicate key, keeps it.
    pub(crate) fn end<T>(self, result: &Result<T, JobError>) {
        if let Lease::Pinned(mut guard) = self {
            let broken = result.as_ref().err().is_some_and(|e| {
                matches!(
                    e.code(),
                    Some(ErrorCode::Driver | ErrorCode::DriverUnavailable) | None
                )
            });
            match (broken, guard.as_mut()) {
                (false, Some(held)) => held.last_used = Instant::now(),
                _ => *guard = None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_young_connection_replans_on_a_doubling_schedule_then_every_period() {
        let every = Duration::from_secs(30);
        let waits: Vec<u64> = (0..7)
            .map(|n| young_replan_after(n, every).as_secs())
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 30, 30]);
        assert_eq!(young_replan_after(u32::MAX, every), every);
        assert_eq!(young_replan_after(0, Duration::ZERO), Duration::ZERO);
    }
}
