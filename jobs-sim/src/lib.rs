//! Deterministic simulation of a whole fleet: workers, a scheduler and its standby, a
//! producer and an operator, each a simulated process on one thread, over one store (the memory
//! driver, through the port every driver implements) whose calls a seeded schedule delays,
//! fails before they apply, applies with their reply lost, and answers late; processes are
//! crashed (every task dropped, their claims and leases left to lapse) and restarted, and their
//! clocks skewed and jumped. Invariants are checked as events happen and at the end, and a run
//! is a function of its seed: the same seed makes the same trace, hash for hash.
//!
//! ```no_run
//! let outcome = jobs_sim::run(&jobs_sim::Scenario::seed(42));
//! assert!(outcome.violations.is_empty(), "{}", outcome.report());
//! ```
//!
//! `docs/how-we-test.md` explains the simulator, the invariants, replaying a seed, and what is
//! and is not covered.

pub mod clock;
pub mod fleet;
pub mod history;
pub mod invariants;
pub mod store;
pub mod world;

use std::time::Duration;

use jobs::simulation::Plant;

use crate::clock::{epoch, Offset};
use crate::history::{History, Stats, Violation};
use crate::world::{FaultRates, World};

pub use crate::history::Invariant;

/// One simulation run's settings.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The seed: everything else in a run follows from it.
    pub seed: u64,
    /// Worker processes.
    pub workers: usize,
    /// Jobs the producer enqueues.
    pub jobs: u32,
    /// How far any process's clock may be from the simulation's time: clocks are skewed at
    /// start and jumped during the chaos within it, so two clocks differ by up to twice this.
    /// Claims and leases are judged by the clock of the process that asks; the workers allow
    /// for a skew of twice this (`WorkerBuilder::clock_skew`). Default 1 s.
    pub skew: Duration,
    /// How long faults, crashes and clock jumps go on.
    pub chaos: Duration,
    /// How long the healed fleet gets to settle every accepted job.
    pub heal: Duration,
    /// The simulation's step.
    pub tick: Duration,
    /// How often each fault strikes.
    pub rates: FaultRates,
    /// A bug planted in the store, to show the invariants catch it.
    pub planted: Option<Plant>,
    /// Keep the trace's lines (a replay prints them).
    pub keep_trace: bool,
}

impl Scenario {
    /// The scenario of `seed`: its shape (how many workers, how many jobs, how stormy the
    /// store) is drawn from the seed too, so a thousand seeds try a thousand fleets.
    pub fn seed(seed: u64) -> Self {
        use rand::{Rng, SeedableRng};
        let mut shape = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5ca1_ab1e_0000_0001);
        let storm = [0.5, 1.0, 1.0, 2.0, 3.0][shape.random_range(0..5)];
        Scenario {
            seed,
            workers: shape.random_range(1..=4),
            jobs: shape.random_range(fleet::DEFAULT_JOBS - 10..=fleet::DEFAULT_JOBS + 10),
            skew: Duration::from_secs(1),
            chaos: Duration::from_secs(100),
            heal: Duration::from_secs(240),
            tick: Duration::from_millis(25),
            rates: FaultRates::DEFAULT.scaled(storm),
            planted: None,
            keep_trace: false,
        }
    }
}

/// Every bug the store can be told to have, by the name the command line takes, with the
/// invariant that must catch it.
pub const PLANTS: [(&str, Plant, Invariant); 13] = [
    (
        "settle-without-fence",
        Plant::SettleWithoutFence,
        Invariant::FencedSettles,
    ),
    (
        "step-forgotten",
        Plant::StepForgotten,
        Invariant::StepRunsOnce,
    ),
    (
        "enqueue-lost",
        Plant::EnqueueLost,
        Invariant::AcceptedJobsFinish,
    ),
    (
        "dedupe-ignores-tenant",
        Plant::DedupeIgnoresTenant,
        Invariant::DedupeKeepsTenants,
    ),
    (
        "lease-over-capacity",
        Plant::LeaseOverCapacity,
        Invariant::LeaseExclusive,
    ),
    (
        "task-fire-ignores-watermark",
        Plant::TaskFireIgnoresWatermark,
        Invariant::CronFiresOnce,
    ),
    (
        "counter-miscount",
        Plant::CounterMiscount,
        Invariant::CountersAgree,
    ),
    (
        "posting-drops-a-line",
        Plant::PostingDropsALine,
        Invariant::LedgerBalanced,
    ),
    (
        "event-dropped",
        Plant::EventDropped,
        Invariant::EventsDelivered,
    ),
    (
        "dependency-ignored",
        Plant::DependencyIgnored,
        Invariant::DependenciesFirst,
    ),
    (
        "batch-callback-early",
        Plant::BatchCallbackEarly,
        Invariant::BatchCallbackLast,
    ),
    (
        "batch-open-refuses-its-callback",
        Plant::BatchOpenRefusesItsCallback,
        Invariant::RetriesConverge,
    ),
    (
        "group-wakes-early",
        Plant::GroupWakesEarly,
        Invariant::Progress,
    ),
];

/// The planted bug named `name` on the command line.
pub fn plant_named(name: &str) -> Option<Plant> {
    PLANTS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, p, _)| *p)
}

/// What a run did and found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Its seed.
    pub seed: u64,
    /// Its fleet: workers, jobs, fault rates.
    pub shape: String,
    /// The hash of its trace: the same for every run of one seed.
    pub trace_hash: u64,
    /// What broke.
    pub violations: Vec<Violation>,
    /// What it did.
    pub stats: Stats,
    /// Simulated time it ran.
    pub simulated: Duration,
    /// The trace's lines, when kept.
    pub trace: Vec<String>,
}

impl Outcome {
    /// A report for a person: the seed, the command that replays it, and what broke.
    pub fn report(&self) -> String {
        let mut out = format!(
            "seed {}: trace {:016x}, {} violation(s) in {:?} simulated\n  replay: cargo run -p jobs-sim -- replay {}\n  {}\n  {:?}\n",
            self.seed,
            self.trace_hash,
            self.violations.len(),
            self.simulated,
            self.seed,
            self.shape,
            self.stats
        );
        for v in &self.violations {
            out.push_str(&format!("  {}: {}\n", v.invariant, v.detail));
        }
        out
    }
}

/// How often, in simulated time, a process crashes (restarting 0.1-8 s later), freezes (for
/// 4-12 s), or has its clock jumped (up to 1.5 s either way, within the scenario's skew),
/// while the chaos lasts.
const CRASHES_PER_SECOND: f64 = 0.08;
const FREEZES_PER_SECOND: f64 = 0.08;
const JUMPS_PER_SECOND: f64 = 0.03;

/// The processes of a run, by name.
const WORKERS: [&str; 4] = ["worker-1", "worker-2", "worker-3", "worker-4"];
const SCHEDULERS: [&str; 2] = ["scheduler-1", "scheduler-2"];
const PRODUCER: &str = "producer";
const OPERATOR: &str = "operator";

/// Runs one scenario to its end and checks it.
///
/// # Panics
/// When the simulation itself cannot run (a process's software refused to start).
pub fn run(scenario: &Scenario) -> Outcome {
    let _determinism = jobs::simulation::install(scenario.seed);
    if let Some(bug) = scenario.planted {
        jobs::simulation::plant(bug);
    }
    let history = if scenario.keep_trace {
        History::keeping_lines()
    } else {
        History::default()
    };
    let world = World::new(scenario.seed, scenario.rates, history);

    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(24 * 3600))
        .tick_duration(scenario.tick)
        .rng_seed(scenario.seed)
        .build();

    let workers = &WORKERS[..scenario.workers.clamp(1, WORKERS.len())];
    let mut processes: Vec<(&'static str, Offset)> = Vec::new();
    let bound = scenario.skew.as_millis() as i64;
    let skew = |world: &World| {
        Offset::of(world.draw(|rng| rand::Rng::random_range(rng, -bound / 4..=bound / 4)))
    };
    for &name in workers {
        let offset = skew(&world);
        let allowance = scenario.skew * 2;
        sim.host(
            name,
            fleet::worker(world.clone(), name, offset.clone(), allowance),
        );
        processes.push((name, offset));
    }
    for &name in &SCHEDULERS {
        let offset = skew(&world);
        sim.host(name, fleet::scheduler(world.clone(), name, offset.clone()));
        processes.push((name, offset));
    }
    let offset = skew(&world);
    sim.host(
        PRODUCER,
        fleet::producer(world.clone(), PRODUCER, offset.clone(), scenario.jobs),
    );
    processes.push((PRODUCER, offset));
    let offset = skew(&world);
    sim.host(
        OPERATOR,
        fleet::operator(world.clone(), OPERATOR, offset.clone()),
    );

    // Chaos: crashes with restarts a little later, and clock jumps, between steps.
    let steps = |d: Duration| (d.as_millis() / scenario.tick.as_millis().max(1)) as u64;
    let mut down: Vec<(&'static str, u64)> = Vec::new();
    let mut frozen: Vec<(&'static str, u64)> = Vec::new();
    for step in 0..steps(scenario.chaos) {
        sim.step().expect("the simulation runs");
        down.retain(|(name, until)| {
            if *until <= step {
                world.history().note(|| format!("restart {name}"));
                sim.bounce(*name);
                false
            } else {
                true
            }
        });
        frozen.retain(|(name, until)| {
            if *until <= step {
                world.history().note(|| format!("thaw {name}"));
                world.freeze(name, false);
                false
            } else {
                true
            }
        });
        let per_step = scenario.tick.as_secs_f64();
        let (crash, freeze, jump, pick, pause, by) = world.draw(|rng| {
            use rand::Rng;
            (
                rng.random_bool(CRASHES_PER_SECOND * per_step),
                rng.random_bool(FREEZES_PER_SECOND * per_step),
                rng.random_bool(JUMPS_PER_SECOND * per_step),
                rng.random_range(0..processes.len()),
                rng.random_range(100..8_000u64),
                rng.random_range(-1_500..=1_500i64),
            )
        });
        let (name, offset) = &processes[pick];
        if crash && !down.iter().any(|(n, _)| n == name) {
            let mut history = world.history();
            history.stats.crashes += 1;
            history.note(|| format!("crash {name}"));
            drop(history);
            sim.crash(*name);
            down.push((name, step + steps(Duration::from_millis(pause))));
        }
        if freeze && !frozen.iter().any(|(n, _)| n == name) {
            let mut history = world.history();
            history.stats.freezes += 1;
            history.note(|| format!("freeze {name}"));
            drop(history);
            world.freeze(name, true);
            frozen.push((name, step + steps(Duration::from_millis(pause + 4_000))));
        }
        if jump {
            let mut history = world.history();
            history.stats.jumps += 1;
            let landed = offset.jump(by, bound);
            history.note(|| format!("jump {name} {by:+}ms to {landed:+}ms"));
        }
    }

    // Healing: faults off, every process up, every queue resumed; run until every accepted job
    // has settled, or the bound.
    world.set_faults(false);
    for (name, _) in frozen.drain(..) {
        world.history().note(|| format!("thaw {name}"));
        world.freeze(name, false);
    }
    for (name, _) in down.drain(..) {
        world.history().note(|| format!("restart {name}"));
        sim.bounce(name);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime for the checks");
    runtime.block_on(resume_every_queue(&world));
    for step in 0..steps(scenario.heal) {
        sim.step().expect("the simulation runs");
        if step % 100 == 0 {
            let now = jobs::clock::add(epoch(), sim.elapsed());
            if runtime.block_on(invariants::unsettled(&world, now)) == 0 {
                break;
            }
        }
    }
    let now = jobs::clock::add(epoch(), sim.elapsed());
    runtime.block_on(invariants::check_at_end(&world, now));

    let history = world.history();
    Outcome {
        seed: scenario.seed,
        shape: format!(
            "{} workers, {} jobs, {:?}",
            workers.len(),
            scenario.jobs,
            scenario.rates
        ),
        trace_hash: history.trace_hash(),
        violations: history.violations.clone(),
        stats: history.stats.clone(),
        simulated: sim.elapsed(),
        trace: history.lines().to_vec(),
    }
}

/// Resumes every paused queue (an operator crashed between its pause and its resume).
async fn resume_every_queue(world: &World) {
    use jobs::driver::introspect::QueueResumeParams;
    use jobs::driver::JobDriver;
    let introspect = world
        .store
        .introspect()
        .expect("the memory driver introspects");
    let now = epoch();
    for paused in introspect.queue_paused().await.unwrap_or_default() {
        let _ = introspect
            .queue_resume(&QueueResumeParams {
                queue: &paused.queue,
                now,
            })
            .await;
    }
}
