//! The scheduler on the memory driver, driven by a test clock: fires on schedule exactly once,
//! catch-up policies after downtime, DST in a real zone, pause and resume, `next_run`, the fire
//! record, manual fires, the leader lease, and a double fire absorbed by the occurrence keys.

use std::sync::Arc;
use std::time::Duration;

use jobs::clock::{Clock, TestClock, Timestamp};
use jobs::driver::scheduler_store::TaskFireParams;
use jobs::driver::{JobDriver, MemoryDriver};
use jobs::prelude::*;
use jobs::{CatchUp, Registry, Scheduler, Task, TaskDescriptor};

#[derive(Serialize, Deserialize, JsonSchema)]
struct Slot {
    at: String,
}

#[job(key = "tick:{at}", tenant = none)]
async fn on_tick(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

#[job(key = "audit:{at}", tenant = none, queue = "audit")]
async fn audit(_run: Run, _input: Slot) -> Result<(), JobError> {
    Ok(())
}

fn slot(at: &Occurrence) -> Slot {
    Slot {
        at: at.local().to_rfc3339(),
    }
}

/// Declares a task by hand (what `#[task]` expands to): two jobs per occurrence.
macro_rules! task {
    ($ty:ident, $name:literal, $cron:literal, $tz:literal, $policy:expr, $max:expr) => {
        struct $ty;
        impl Task for $ty {
            const DESCRIPTOR: TaskDescriptor = TaskDescriptor {
                name: $name,
                cron: $cron,
                tz: $tz,
                catch_up: $policy,
                max_catch_up: $max,
            };
            fn entries(at: &Occurrence) -> Vec<Entry> {
                vec![Entry::of::<OnTick>(slot(at)), Entry::of::<Audit>(slot(at))]
            }
        }
    };
}

task!(Every5, "every5", "*/5 * * * *", "UTC", CatchUp::Skip, 10);
task!(
    HourlySkip,
    "hourly-skip",
    "0 * * * *",
    "UTC",
    CatchUp::Skip,
    10
);
task!(
    HourlyOnce,
    "hourly-once",
    "0 * * * *",
    "UTC",
    CatchUp::RunOnce,
    10
);
task!(
    HourlyAll,
    "hourly-all",
    "0 * * * *",
    "UTC",
    CatchUp::RunAll,
    3
);
task!(
    NySpring,
    "ny-spring",
    "30 2 * * *",
    "America/New_York",
    CatchUp::Skip,
    10
);
task!(
    NyFixed,
    "ny-fixed",
    "30 1 * * *",
    "America/New_York",
    CatchUp::Skip,
    10
);
task!(
    NyInterval,
    "ny-interval",
    "*/30 1 * * *",
    "America/New_York",
    CatchUp::Skip,
    10
);
task!(BadCron, "bad-cron", "* * * *", "UTC", CatchUp::Skip, 10);
task!(BadTz, "bad-tz", "* * * * *", "Bogota", CatchUp::Skip, 10);
task!(
    NoCatchUp,
    "no-catch-up",
    "* * * * *",
    "UTC",
    CatchUp::RunAll,
    0
);
task!(
    ClashesWithJob,
    "on_tick",
    "* * * * *",
    "UTC",
    CatchUp::Skip,
    10
);

fn at(text: &str) -> Timestamp {
    text.parse().expect("an RFC 3339 instant")
}

struct World {
    driver: Arc<MemoryDriver>,
    clock: TestClock,
    jobs: Jobs,
}

fn world(start: &str) -> World {
    let driver = Arc::new(MemoryDriver::new());
    let clock = TestClock::at(at(start));
    let jobs = Jobs::with_clock(driver.clone(), Arc::new(clock.clone()));
    World {
        driver,
        clock,
        jobs,
    }
}

fn registry(add: impl FnOnce(&mut Registry) -> Result<&mut Registry, JobError>) -> Registry {
    let mut registry = Registry::new();
    add(&mut registry).expect("registers");
    registry
}

impl World {
    fn scheduler(&self, registry: Registry) -> Scheduler {
        self.jobs
            .scheduler()
            .registry(registry)
            .build()
            .expect("builds")
    }

    /// Ticks every `step` until `until`, collecting what was fired.
    async fn run(&self, s: &Scheduler, step: Duration, until: &str) -> Vec<(String, Timestamp)> {
        let until = at(until);
        let mut fired = Vec::new();
        while self.clock.now() < until {
            self.clock.advance(step);
            fired.extend(s.tick().await.expect("a round").fired);
        }
        fired
    }

    fn keys(&self) -> Vec<String> {
        self.driver
            .all_jobs()
            .into_iter()
            .map(|j| format!("{}/{}", j.name, j.idempotency_key))
            .collect()
    }
}

fn occurrences(fired: &[(String, Timestamp)]) -> Vec<String> {
    fired.iter().map(|(_, at)| at.to_rfc3339()).collect()
}

#[tokio::test]
async fn fires_on_schedule_exactly_once_per_occurrence() {
    let w = world("2030-01-01T00:00:00Z");
    let s = w.scheduler(registry(|r| r.register_task::<Every5>()));
    let first = s.tick().await.unwrap();
    assert!(
        first.leading && first.fired.is_empty(),
        "arming is not a fire"
    );
    let fired = w
        .run(&s, Duration::from_secs(1), "2030-01-01T00:15:30Z")
        .await;
    assert_eq!(
        occurrences(&fired),
        [
            "2030-01-01T00:05:00+00:00",
            "2030-01-01T00:10:00+00:00",
            "2030-01-01T00:15:00+00:00"
        ]
    );
    // Ticking again at the same instant fires nothing more.
    assert!(s.tick().await.unwrap().fired.is_empty());
    let keys = w.keys();
    assert_eq!(keys.len(), 6, "two jobs per occurrence: {keys:?}");
    let ms = at("2030-01-01T00:05:00Z").timestamp_millis();
    assert_eq!(
        keys[0],
        format!("on_tick/every5:{ms}:tick:2030-01-01T00:05:00+00:00"),
        "the key is scoped to the occurrence"
    );
    assert_eq!(
        keys[1],
        format!("audit/every5:{ms}:audit:2030-01-01T00:05:00+00:00")
    );
}

#[tokio::test]
async fn an_idle_leader_reads_no_store_between_renewals() {
    let w = world("2030-01-01T00:00:30Z");
    let s = w.scheduler(registry(|r| {
        r.register_task::<HourlySkip>()?
            .register_task::<HourlyOnce>()?
            .register_task::<HourlyAll>()
    }));
    s.tick().await.unwrap();
    let before = s.stats();
    let fired = w
        .run(&s, Duration::from_secs(1), "2030-01-01T00:01:30Z")
        .await;
    let after = s.stats();
    assert!(fired.is_empty());
    assert_eq!(
        after.store_calls - before.store_calls,
        6,
        "one renewal every 10 s"
    );
    assert_eq!(
        after.cron_evaluations, before.cron_evaluations,
        "an idle round resolves no cron"
    );
    assert_eq!(after.rounds - before.rounds, 60);
}

#[tokio::test]
async fn catch_up_skip_fires_the_latest_missed_occurrence() {
    let w = world("2030-01-01T00:00:30Z");
    let s = w.scheduler(registry(|r| r.register_task::<HourlySkip>()));
    s.tick().await.unwrap();
    w.clock.set(at("2030-01-01T05:30:00Z")); // five hours down
    let round = s.tick().await.unwrap();
    assert_eq!(occurrences(&round.fired), ["2030-01-01T05:00:00+00:00"]);
    let fired = w
        .run(&s, Duration::from_secs(60), "2030-01-01T06:30:00Z")
        .await;
    assert_eq!(occurrences(&fired), ["2030-01-01T06:00:00+00:00"]);
}

#[tokio::test]
async fn catch_up_skip_after_a_year_stays_cheap() {
    let w = world("2030-01-01T00:00:30Z");
    let s = w.scheduler(registry(|r| r.register_task::<Every5>()));
    s.tick().await.unwrap();
    w.clock.set(at("2031-01-01T00:02:13Z"));
    let before = s.stats().cron_evaluations;
    let round = s.tick().await.unwrap();
    let spent = s.stats().cron_evaluations - before;
    assert_eq!(occurrences(&round.fired), ["2031-01-01T00:00:00+00:00"]);
    assert!(
        spent <= 40,
        "bisection over a year: {spent} cron evaluations"
    );
    println!("skip over a year of */5: {spent} cron evaluations");
}

#[tokio::test]
async fn catch_up_run_once_fires_the_earliest_and_passes_the_rest() {
    let w = world("2030-01-01T00:00:30Z");
    let s = w.scheduler(registry(|r| r.register_task::<HourlyOnce>()));
    s.tick().await.unwrap();
    w.clock.set(at("2030-01-01T05:30:00Z"));
    let round = s.tick().await.unwrap();
    assert_eq!(occurrences(&round.fired), ["2030-01-01T01:00:00+00:00"]);
    let fired = w
        .run(&s, Duration::from_secs(1), "2030-01-01T06:00:30Z")
        .await;
    assert_eq!(
        occurrences(&fired),
        ["2030-01-01T06:00:00+00:00"],
        "the rest were passed"
    );
}

#[tokio::test]
async fn catch_up_run_all_fires_every_missed_occurrence_bounded_per_round() {
    let w = world("2030-01-01T00:00:30Z");
    let s = w.scheduler(registry(|r| r.register_task::<HourlyAll>()));
    s.tick().await.unwrap();
    w.clock.set(at("2030-01-01T05:30:00Z"));
    let first = s.tick().await.unwrap();
    assert_eq!(
        occurrences(&first.fired),
        [
            "2030-01-01T01:00:00+00:00",
            "2030-01-01T02:00:00+00:00",
            "2030-01-01T03:00:00+00:00"
        ],
        "max_catch_up = 3 per round"
    );
    let second = s.tick().await.unwrap();
    assert_eq!(
        occurrences(&second.fired),
        ["2030-01-01T04:00:00+00:00", "2030-01-01T05:00:00+00:00"]
    );
    assert!(s.tick().await.unwrap().fired.is_empty());
    assert_eq!(w.keys().len(), 10);
}

#[tokio::test]
async fn spring_forward_a_fixed_time_in_the_gap_fires_at_the_next_valid_instant() {
    // New York, 2030-03-10: 02:00 EST jumps to 03:00 EDT; 02:30 does not exist that day.
    let w = world("2030-03-09T12:00:00Z");
    let s = w.scheduler(registry(|r| r.register_task::<NySpring>()));
    s.tick().await.unwrap();
    let fired = w
        .run(&s, Duration::from_secs(60), "2030-03-11T12:00:00Z")
        .await;
    assert_eq!(
        occurrences(&fired),
        [
            "2030-03-10T07:00:00+00:00", // 03:00 EDT, once
            "2030-03-11T06:30:00+00:00", // 02:30 EDT
        ]
    );
}

#[tokio::test]
async fn fall_back_a_fixed_time_fires_once_and_an_interval_fires_in_both_passes() {
    // New York, 2030-11-03: 02:00 EDT falls back to 01:00 EST; 01:00-01:59 happens twice.
    let w = world("2030-11-02T12:00:00Z");
    let s = w.scheduler(registry(|r| {
        r.register_task::<NyFixed>()?.register_task::<NyInterval>()
    }));
    s.tick().await.unwrap();
    let fired = w
        .run(&s, Duration::from_secs(60), "2030-11-03T12:00:00Z")
        .await;
    let by = |task: &str| {
        occurrences(
            &fired
                .iter()
                .filter(|(t, _)| t == task)
                .cloned()
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        by("ny-fixed"),
        ["2030-11-03T05:30:00+00:00"],
        "01:30 EDT only"
    );
    assert_eq!(
        by("ny-interval"),
        [
            "2030-11-03T05:00:00+00:00", // 01:00 EDT
            "2030-11-03T05:30:00+00:00", // 01:30 EDT
            "2030-11-03T06:00:00+00:00", // 01:00 EST
            "2030-11-03T06:30:00+00:00", // 01:30 EST
        ]
    );
}

#[tokio::test]
async fn a_paused_task_does_not_fire_and_on_resume_its_catch_up_decides() {
    let w = world("2030-01-01T00:00:00Z");
    let s = w.scheduler(registry(|r| r.register_task::<Every5>()));
    s.tick().await.unwrap();
    let fired = w
        .run(&s, Duration::from_secs(1), "2030-01-01T00:05:00Z")
        .await;
    assert_eq!(occurrences(&fired), ["2030-01-01T00:05:00+00:00"]);
    w.jobs.tasks().pause("every5").await.unwrap();
    assert_eq!(w.jobs.tasks().paused().await.unwrap(), ["every5"]);
    let paused = w
        .run(&s, Duration::from_secs(1), "2030-01-01T00:31:00Z")
        .await;
    assert!(paused.is_empty(), "no fires while paused: {paused:?}");
    assert!(w.jobs.tasks().resume("every5").await.unwrap());
    let resumed = w
        .run(&s, Duration::from_secs(1), "2030-01-01T00:31:05Z")
        .await;
    assert_eq!(
        occurrences(&resumed),
        ["2030-01-01T00:30:00+00:00"],
        "within the 5 s recheck, skip fires the latest missed"
    );
    assert!(!w.jobs.tasks().resume("every5").await.unwrap());
}

#[tokio::test]
async fn next_run_needs_no_scheduler() {
    assert_eq!(
        jobs::next_run::<NySpring>(at("2030-03-09T12:00:00Z")),
        Some(at("2030-03-10T07:00:00Z"))
    );
    assert_eq!(
        jobs::next_run::<Every5>(at("2030-01-01T00:05:00Z")),
        Some(at("2030-01-01T00:10:00Z")),
        "strictly after"
    );
    assert_eq!(jobs::next_run::<BadCron>(at("2030-01-01T00:00:00Z")), None);
}

#[tokio::test]
async fn the_last_fire_of_each_task_is_recorded() {
    let w = world("2030-01-01T00:00:00Z");
    let s = w.scheduler(registry(|r| {
        r.register_task::<Every5>()?.register_task::<HourlySkip>()
    }));
    s.tick().await.unwrap();
    assert!(
        w.jobs.tasks().fires().await.unwrap().is_empty(),
        "arming is not a fire"
    );
    w.run(&s, Duration::from_secs(1), "2030-01-01T00:12:00Z")
        .await;
    let fires = w.jobs.tasks().fires().await.unwrap();
    assert_eq!(fires.len(), 1, "{fires:?}");
    assert_eq!(fires[0].task, "every5");
    assert_eq!(fires[0].occurrence, at("2030-01-01T00:10:00Z"));
    assert_eq!(fires[0].fired_at, at("2030-01-01T00:10:00Z"));
}

/// The names the tasks' methods had before they moved to `jobs.tasks()` still work for one
/// release, deprecated, and answer as the new ones do.
#[tokio::test]
#[allow(deprecated)]
async fn the_moved_task_methods_keep_their_old_names_deprecated() {
    let w = world("2030-01-01T00:00:00Z");
    let s = w.scheduler(registry(|r| r.register_task::<Every5>()));
    s.tick().await.unwrap();
    w.run(&s, Duration::from_secs(1), "2030-01-01T00:06:00Z")
        .await;
    let old = w.jobs.task_fires().await.unwrap();
    assert_eq!(old.len(), 1, "{old:?}");
    assert_eq!(old, w.jobs.tasks().fires().await.unwrap());
    assert_eq!(
        w.jobs.scheduler_leader().await.unwrap(),
        w.jobs.tasks().leader().await.unwrap()
    );
    w.jobs.pause_task("every5").await.unwrap();
    assert_eq!(w.jobs.paused_tasks().await.unwrap(), ["every5"]);
    assert!(w.jobs.resume_task("every5").await.unwrap());
    assert!(w.jobs.tasks().paused().await.unwrap().is_empty());
}

#[tokio::test]
async fn a_manual_fire_uses_the_jobs_plain_keys() {
    let w = world("2030-01-01T00:00:00Z");
    let first = jobs::fire_now::<Every5>(&w.jobs).await.unwrap();
    assert_eq!(first.len(), 2, "one answer per entry");
    assert!(first.iter().all(|r| !r.deduped));
    assert_eq!(
        w.keys(),
        [
            "on_tick/tick:2030-01-01T00:00:00+00:00",
            "audit/audit:2030-01-01T00:00:00+00:00"
        ]
    );
    let again = jobs::fire_now::<Every5>(&w.jobs).await.unwrap();
    assert!(again.iter().all(|r| r.deduped));
    assert_eq!(again[0].id, first[0].id);
    assert!(
        w.jobs.tasks().fires().await.unwrap().is_empty(),
        "a manual fire is not a scheduled one"
    );
}

#[tokio::test]
async fn only_one_scheduler_leads_and_a_graceful_stop_hands_over_at_once() {
    let w = world("2030-01-01T00:00:00Z");
    let a = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("a")
        .build()
        .unwrap();
    let b = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("b")
        .build()
        .unwrap();
    assert!(a.tick().await.unwrap().leading);
    assert!(!b.tick().await.unwrap().leading);
    let mut fired = Vec::new();
    while w.clock.now() < at("2030-01-01T00:10:30Z") {
        w.clock.advance(Duration::from_secs(1));
        fired.extend(a.tick().await.unwrap().fired);
        let standby = b.tick().await.unwrap();
        assert!(!standby.leading && standby.fired.is_empty());
    }
    assert_eq!(fired.len(), 2);
    // A stopped leader deletes its lease row: the standby promotes at its next ask.
    let running = a.start();
    running.shutdown().await.unwrap();
    w.clock.advance(Duration::from_secs(10));
    let promoted = b.tick().await.unwrap();
    assert!(promoted.leading, "promoted without waiting out the TTL");
    let fired = {
        let mut all = Vec::new();
        while w.clock.now() < at("2030-01-01T00:15:30Z") {
            w.clock.advance(Duration::from_secs(1));
            all.extend(b.tick().await.unwrap().fired);
        }
        all
    };
    assert_eq!(
        occurrences(&fired),
        ["2030-01-01T00:15:00+00:00"],
        "it took over the watermark"
    );
    assert_eq!(w.keys().len(), 6);
}

#[tokio::test]
async fn a_leader_that_stalls_loses_the_lease_after_its_ttl() {
    let w = world("2030-01-01T00:00:00Z");
    let a = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("a")
        .build()
        .unwrap();
    let b = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("b")
        .build()
        .unwrap();
    assert!(a.tick().await.unwrap().leading);
    w.clock.advance(Duration::from_secs(29));
    assert!(!b.tick().await.unwrap().leading, "a's lease holds for 30 s");
    w.clock.advance(Duration::from_secs(10));
    assert!(
        b.tick().await.unwrap().leading,
        "the lease expired: b takes it"
    );
    assert!(
        !a.tick().await.unwrap().leading,
        "a learns it lost, and keeps polling"
    );
}

#[tokio::test]
async fn occurrence_keys_absorb_a_double_fire_during_handover() {
    let w = world("2030-01-01T00:00:00Z");
    let a = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("a")
        .build()
        .unwrap();
    let b = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<Every5>()))
        .id("b")
        .build()
        .unwrap();
    assert!(a.tick().await.unwrap().leading);
    w.clock.set(at("2030-01-01T00:05:00Z"));
    // a renews at 00:00:10, .. and fires 00:05 in the round at 00:05.
    let fired_a = a.tick().await.unwrap().fired;
    assert_eq!(occurrences(&fired_a), ["2030-01-01T00:05:00+00:00"]);
    // a stalls. b took its view of the watermark before a's fire landed: rewind it, as a store
    // restored from before the fire would, so the watermark fence cannot tell the two apart.
    let store = w.driver.scheduler_store().unwrap();
    let rewound = store
        .task_fire(&TaskFireParams {
            task: "every5".into(),
            expected: Some(at("2030-01-01T00:05:00Z")),
            watermark: at("2030-01-01T00:00:00Z"),
            occurrence: None,
            jobs: Vec::new(),
            now: w.clock.now(),
        })
        .await
        .unwrap();
    assert!(rewound.fired);
    w.clock.advance(Duration::from_secs(31));
    // Both thought they led for 00:05: b fires it again, and every job dedupes.
    let second = b.tick().await.unwrap();
    assert!(second.leading);
    assert_eq!(occurrences(&second.fired), ["2030-01-01T00:05:00+00:00"]);
    assert_eq!(
        w.keys().len(),
        2,
        "the double fire inserted nothing: {:?}",
        w.keys()
    );
}

#[tokio::test]
async fn runtime_refusals_and_the_duplicate_rule() {
    let w = world("2030-01-01T00:00:00Z");
    for (registry, needle) in [
        (registry(|r| r.register_task::<BadCron>()), "found 4"),
        (registry(|r| r.register_task::<BadTz>()), "not an IANA"),
        (
            registry(|r| r.register_task::<NoCatchUp>()),
            "max_catch_up = 0",
        ),
    ] {
        let err = w.jobs.scheduler().registry(registry).build().unwrap_err();
        assert!(err.is(ErrorCode::Invariant), "{err}");
        assert!(err.message().contains(needle), "{err}");
    }
    let err = w
        .jobs
        .scheduler()
        .registry(registry(|r| r.register_task::<BadTz>()))
        .build()
        .unwrap_err();
    assert_eq!(err.fix(), Some("use `America/Bogota`"));
    let mut r = Registry::new();
    r.register::<OnTick>().unwrap();
    let err = r.register_task::<ClashesWithJob>().unwrap_err();
    assert!(err.is(ErrorCode::JobDuplicate), "{err}");
    let mut r = Registry::new();
    r.register_task::<ClashesWithJob>().unwrap();
    r.register_task::<ClashesWithJob>()
        .expect("the same task twice is one registration");
    assert!(r
        .register::<OnTick>()
        .unwrap_err()
        .is(ErrorCode::JobDuplicate));
}

#[tokio::test]
async fn the_manifest_lists_tasks_with_the_jobs_they_fire() {
    let registry = registry(|r| r.register::<OnTick>()?.register_task::<HourlyAll>());
    let manifest = jobs::Manifest::of(&registry);
    let row = &manifest.tasks()[0];
    assert_eq!(
        row,
        &serde_json::json!({
            "kind": "task",
            "name": "hourly-all",
            "cron": "0 * * * *",
            "tz": "UTC",
            "catch_up": "run-all",
            "max_catch_up": 3,
            "jobs": ["on_tick", "audit"],
        })
    );
    assert!(manifest.to_json().contains("\"tasks\""));
}

#[derive(Serialize, Deserialize, JsonSchema)]
struct Digest {
    day: String,
}

#[job(key = "digest:{day}", tenant = none)]
async fn send_digest(_run: Run, _input: Digest) -> Result<(), JobError> {
    Ok(())
}

/// Declared with the attribute: weekdays (1-5 is Monday to Friday) at 09:00 in Paris.
#[task(cron = "0 9 * * 1-5", tz = "Europe/Paris")]
fn weekday_digest(at: Occurrence) -> Vec<Entry> {
    vec![Entry::of::<SendDigest>(Digest {
        day: at.date().to_string(),
    })]
}

#[tokio::test]
async fn a_task_declared_with_the_attribute_fires_on_weekdays_only() {
    // Friday 2030-01-04, 00:00 UTC.
    let w = world("2030-01-04T00:00:00Z");
    let s = w.scheduler(registry(|r| r.register_task::<WeekdayDigest>()));
    s.tick().await.unwrap();
    let fired = w
        .run(&s, Duration::from_secs(600), "2030-01-08T00:00:00Z")
        .await;
    assert_eq!(
        occurrences(&fired),
        [
            "2030-01-04T08:00:00+00:00", // Friday 09:00 CET
            "2030-01-07T08:00:00+00:00", // Monday
        ]
    );
    assert_eq!(
        jobs::next_run::<WeekdayDigest>(at("2030-01-04T08:00:00Z")),
        Some(at("2030-01-07T08:00:00Z"))
    );
    let registry = Registry::global().unwrap();
    assert!(
        registry.task("weekday_digest").is_some(),
        "the attribute registers it"
    );
}
