//! A simulated process's clock: the simulation's time as its host runtime sees it (tokio's
//! paused clock, moved by the simulation's steps), plus the process's own offset, which the
//! simulation skews at start and jumps (either way, within a bound) during a run.
//!
//! Like the real [`SystemClock`](jobs::clock::SystemClock), a sleep is a tokio timer of the
//! wait computed when it starts: a jump does not wake a sleeper early, and an offset is seen by
//! every `now()` (the due times and deadlines the process writes to the store).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jobs::clock::{add, Clock, Timestamp};

/// Where simulated time starts: 2030-01-01T00:00:30Z, half a minute before the first cron
/// occurrence.
pub fn epoch() -> Timestamp {
    "2030-01-01T00:00:30Z".parse().expect("a valid literal")
}

/// The simulation's time in milliseconds, as the calling process's host last saw it (zero
/// outside a simulated process).
pub fn simulated_ms() -> u64 {
    turmoil::sim_elapsed().unwrap_or_default().as_millis() as u64
}

/// A process's offset from the simulation's time, in milliseconds (shared with the
/// simulation, which skews and jumps it).
#[derive(Debug, Clone, Default)]
pub struct Offset(Arc<AtomicI64>);

impl Offset {
    /// An offset of `ms` milliseconds.
    pub fn of(ms: i64) -> Self {
        Offset(Arc::new(AtomicI64::new(ms)))
    }

    /// Jumps the offset by `ms` milliseconds (either way), kept within `bound` of the
    /// simulation's time; answers the offset it landed on.
    pub fn jump(&self, ms: i64, bound: i64) -> i64 {
        let landed = (self.ms() + ms).clamp(-bound, bound);
        self.0.store(landed, Ordering::Relaxed);
        landed
    }

    /// The offset in milliseconds.
    pub fn ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// The clock of one run of a simulated process (made again when the process restarts).
#[derive(Debug)]
pub struct SimClock {
    started: tokio::time::Instant,
    started_at: Timestamp,
    offset: Offset,
}

impl SimClock {
    /// A clock for the process starting now on its host runtime, `elapsed` into the simulation.
    pub fn start(elapsed: Duration, offset: Offset) -> Self {
        SimClock {
            started: tokio::time::Instant::now(),
            started_at: add(epoch(), elapsed),
            offset,
        }
    }
}

impl Clock for SimClock {
    fn now(&self) -> Timestamp {
        let since = tokio::time::Instant::now() - self.started;
        add(self.started_at, since) + chrono::Duration::milliseconds(self.offset.ms())
    }

    fn sleep_until(&self, deadline: Timestamp) -> BoxFuture<'static, ()> {
        let wait = (deadline - self.now()).to_std().unwrap_or_default();
        Box::pin(tokio::time::sleep(wait))
    }

    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}
