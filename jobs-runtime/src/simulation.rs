//! Hooks for the deterministic simulator (the `jobs-sim` crate), behind the feature
//! `simulation`: never on in an application's build.
//!
//! The simulator runs a whole fleet (workers, schedulers, producers, operators) on one thread.
//! [`install`] makes every id and random draw of the library on that thread a function of the
//! seed (see `entropy.rs`), so a seed replays exactly. [`plant`] switches on one of the bugs the
//! memory driver (or a batch's open) can be told to have, so a test can show that the simulator's invariants catch
//! the bug they exist for.
//!
//! ```
//! let _determinism = jobs::simulation::install(7);
//! jobs::simulation::plant(jobs::simulation::Plant::SettleWithoutFence);
//! assert!(jobs::simulation::is_planted(jobs::simulation::Plant::SettleWithoutFence));
//! ```

use std::cell::RefCell;
use std::collections::BTreeSet;

use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use uuid::Uuid;

/// 2030-01-01T00:00:00Z in Unix milliseconds: where the simulated ids' clock starts.
const ID_EPOCH_MS: u64 = 1_893_456_000_000;

/// A bug the memory driver (and, for one, a batch's open) can be told to have, one per
/// invariant the simulator checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Plant {
    /// Ack, nack, heartbeat and step writes land without checking the claim (the fence).
    SettleWithoutFence,
    /// A step write answers `true` and keeps nothing, so the step's body runs again.
    StepForgotten,
    /// An enqueue answers its ids and keeps no row (one in eight, by id).
    EnqueueLost,
    /// A live idempotency key is looked up without its tenant.
    DedupeIgnoresTenant,
    /// A lease is granted beyond its capacity.
    LeaseOverCapacity,
    /// A task's fire ignores its watermark, so an occurrence can fire twice.
    TaskFireIgnoresWatermark,
    /// The operator's counters count a finished job's success twice.
    CounterMiscount,
    /// A posting is kept without its last line, so its ledger no longer balances.
    PostingDropsALine,
    /// A published event answers its id and is kept nowhere, so no wait ever sees it.
    EventDropped,
    /// A dependent starts as if its dependencies were done.
    DependencyIgnored,
    /// A closed batch's callback is made due before its members settled.
    BatchCallbackEarly,
    /// Every group counts as done before its members settle: a parent woken early finds its
    /// children running, parks, and is woken again without end, and no time passes.
    GroupWakesEarly,
    /// A batch's open refuses the callback its own earlier, half-done try enqueued (the
    /// behaviour before the simulator found it; not in the memory driver but in `batch.rs`).
    BatchOpenRefusesItsCallback,
}

struct Simulation {
    rng: StdRng,
    ids: u64,
    planted: BTreeSet<Plant>,
}

thread_local! {
    static CURRENT: RefCell<Option<Simulation>> = const { RefCell::new(None) };
}

/// While alive, the library's ids and random draws on this thread come from a seed.
#[derive(Debug)]
#[must_use = "the simulation is uninstalled when this guard drops"]
pub struct Installed(());

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|current| current.borrow_mut().take());
    }
}

/// Makes this thread's ids and random draws a function of `seed` until the guard drops.
pub fn install(seed: u64) -> Installed {
    CURRENT.with(|current| {
        *current.borrow_mut() = Some(Simulation {
            rng: StdRng::seed_from_u64(seed),
            ids: 0,
            planted: BTreeSet::new(),
        })
    });
    Installed(())
}

/// Plants `bug` in the memory driver for the rest of the installed simulation on this thread.
///
/// # Panics
/// When no simulation is installed on this thread: a planted bug never outlives its run.
pub fn plant(bug: Plant) {
    CURRENT.with(|current| {
        current
            .borrow_mut()
            .as_mut()
            .expect("plant a bug only inside an installed simulation")
            .planted
            .insert(bug)
    });
}

/// Whether `bug` is planted on this thread.
pub fn is_planted(bug: Plant) -> bool {
    CURRENT.with(|current| {
        current
            .borrow()
            .as_ref()
            .is_some_and(|sim| sim.planted.contains(&bug))
    })
}

/// The next id of the installed simulation: time-ordered by a counter, its random bits seeded.
pub(crate) fn next_id() -> Option<Uuid> {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        let sim = current.as_mut()?;
        sim.ids += 1;
        let mut random = [0u8; 10];
        sim.rng.fill_bytes(&mut random);
        Some(uuid::Builder::from_unix_timestamp_millis(ID_EPOCH_MS + sim.ids, &random).into_uuid())
    })
}

/// Runs `draw` with the installed simulation's generator, or the thread's own without one.
pub(crate) fn with_rng<R>(draw: impl FnOnce(&mut dyn RngCore) -> R) -> R {
    CURRENT.with(|current| match current.borrow_mut().as_mut() {
        Some(sim) => draw(&mut sim.rng),
        None => draw(&mut rand::rng()),
    })
}
