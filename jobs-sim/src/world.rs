//! What every simulated process shares: the one store (the memory driver, through the port the
//! real drivers implement), the seeded generator that decides faults, whether faults are on,
//! and the history.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use jobs::driver::MemoryDriver;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::history::History;

/// How often each fault strikes a store call, in calls per thousand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultRates {
    /// Delayed a little (up to 300 ms) before it applies.
    pub delay: u32,
    /// Delayed long (2-20 s: a paused process, a stalled connection) before it applies.
    pub stall: u32,
    /// Failed before it applies.
    pub fail_before: u32,
    /// Applied, and its reply lost.
    pub fail_after: u32,
    /// Applied, and its reply delayed (up to 2 s).
    pub reply_delay: u32,
    /// Applied, and the caller paused before it reads the reply (4-12 s: a stop-the-world
    /// pause, a suspended VM), past the claim's visibility timeout.
    pub pause_after: u32,
}

impl FaultRates {
    /// The rates a run uses unless told otherwise.
    pub const DEFAULT: FaultRates = FaultRates {
        delay: 60,
        stall: 8,
        fail_before: 25,
        fail_after: 25,
        reply_delay: 20,
        pause_after: 6,
    };
}

impl FaultRates {
    /// Every rate times `factor` (a calm run, a stormy one).
    pub fn scaled(self, factor: f64) -> Self {
        let scale = |rate: u32| ((f64::from(rate) * factor).round() as u32).min(1000);
        FaultRates {
            delay: scale(self.delay),
            stall: scale(self.stall),
            fail_before: scale(self.fail_before),
            fail_after: scale(self.fail_after),
            reply_delay: scale(self.reply_delay),
            pause_after: scale(self.pause_after),
        }
    }
}

/// What happens to one store call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing.
    None,
    /// Waits, then applies.
    Delay(Duration),
    /// Fails without applying.
    FailBefore,
    /// Applies, then fails.
    FailAfter,
    /// Applies, then waits before answering.
    ReplyDelay(Duration),
}

/// The shared state of one simulation run.
#[derive(Debug)]
pub struct World {
    /// The store every process talks to.
    pub store: Arc<MemoryDriver>,
    rng: Mutex<StdRng>,
    faults_on: AtomicBool,
    rates: FaultRates,
    history: Mutex<History>,
    frozen: Mutex<BTreeSet<String>>,
}

impl World {
    /// A world for `seed` (the faults' generator; the library's own draws are seeded apart).
    pub fn new(seed: u64, rates: FaultRates, history: History) -> Arc<Self> {
        Arc::new(World {
            store: Arc::new(MemoryDriver::new()),
            rng: Mutex::new(StdRng::seed_from_u64(seed ^ 0x5eed_fa17)),
            faults_on: AtomicBool::new(true),
            rates,
            history: Mutex::new(history),
            frozen: Mutex::new(BTreeSet::new()),
        })
    }

    /// The history, to read or add to.
    pub fn history(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `draw` with the run's generator.
    pub fn draw<R>(&self, draw: impl FnOnce(&mut StdRng) -> R) -> R {
        draw(&mut self.rng.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Freezes `process`: its store calls wait until it thaws (a paused VM, a stop-the-world
    /// pause, a stalled connection), its heartbeats with them, so its claims and leases lapse.
    pub fn freeze(&self, process: &str, frozen: bool) {
        let mut set = self.frozen.lock().unwrap_or_else(|e| e.into_inner());
        if frozen {
            set.insert(process.to_string());
        } else {
            set.remove(process);
        }
    }

    /// Whether `process` is frozen.
    pub fn is_frozen(&self, process: &str) -> bool {
        self.frozen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(process)
    }

    /// Turns faults on or off (off for the healing phase).
    pub fn set_faults(&self, on: bool) {
        self.faults_on.store(on, Ordering::Relaxed);
    }

    /// Whether faults strike now.
    pub fn faults_on(&self) -> bool {
        self.faults_on.load(Ordering::Relaxed)
    }

    /// The fault for the next store call.
    pub fn fault(&self) -> Fault {
        if !self.faults_on() {
            return Fault::None;
        }
        let r = self.rates;
        self.draw(|rng| {
            let mut roll = rng.random_range(0..1000u32);
            let mut hit = |rate: u32| {
                let hit = roll < rate;
                roll = roll.saturating_sub(rate);
                hit
            };
            if hit(r.delay) {
                Fault::Delay(Duration::from_millis(rng.random_range(1..300)))
            } else if hit(r.stall) {
                Fault::Delay(Duration::from_millis(rng.random_range(2_000..20_000)))
            } else if hit(r.fail_before) {
                Fault::FailBefore
            } else if hit(r.fail_after) {
                Fault::FailAfter
            } else if hit(r.reply_delay) {
                Fault::ReplyDelay(Duration::from_millis(rng.random_range(1..2_000)))
            } else if hit(r.pause_after) {
                Fault::ReplyDelay(Duration::from_millis(rng.random_range(4_000..12_000)))
            } else {
                Fault::None
            }
        })
    }
}
