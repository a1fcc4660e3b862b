//! The one door for ids and random draws. Every id the library makes outside the SQL and Redis
//! drivers (jobs, runs, workers, schedulers, lock holders) and every random draw (retry jitter, trace ids) comes through
//! here, so the deterministic simulator (feature `simulation`, the `jobs-sim` crate) can make
//! them a function of its seed: a replayed seed then makes the same ids in the same order.
//! Without a simulation installed on the calling thread these are `Uuid::now_v7()` and the
//! thread's `rand` generator.

use uuid::Uuid;

/// A fresh time-ordered id (UUID v7).
pub(crate) fn new_id() -> Uuid {
    #[cfg(feature = "simulation")]
    if let Some(id) = crate::simulation::next_id() {
        return id;
    }
    Uuid::now_v7()
}

/// Runs `draw` with the random generator of this thread: the simulation's seeded one when a
/// simulation runs on it.
pub(crate) fn with_rng<R>(draw: impl FnOnce(&mut dyn rand::RngCore) -> R) -> R {
    #[cfg(feature = "simulation")]
    {
        crate::simulation::with_rng(draw)
    }
    #[cfg(not(feature = "simulation"))]
    {
        draw(&mut rand::rng())
    }
}
