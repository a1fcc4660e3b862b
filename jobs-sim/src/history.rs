//! What a run recorded: the trace (every store call, fault, crash and restart, hashed in the
//! order they happened, so a replay can be compared), the facts the invariants read (accepted
//! enqueues, step commits, step bodies and reads, completions, cron fires, lease grants), and
//! the violations caught as they happened.

use std::collections::BTreeMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};

use jobs::driver::lease::HeldLease;
use jobs::driver::{JobId, RunId};

/// An invariant the simulator checks (see `invariants.rs` for each one's reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Invariant {
    /// Every accepted enqueue reaches a terminal state, or is still legitimately pending.
    AcceptedJobsFinish,
    /// A completed run is completed once.
    CompletedOnce,
    /// A completed step's body never runs again.
    StepRunsOnce,
    /// Later attempts read the output the step's one commit kept.
    StepReadsItsCommit,
    /// No settle, heartbeat or step write lands from a worker that lost its claim.
    FencedSettles,
    /// A cron occurrence fires once.
    CronFiresOnce,
    /// A lease slot is never held by two holders, nor a key by more holders than its limit.
    LeaseExclusive,
    /// The operator's counters agree with the rows.
    CountersAgree,
    /// Dedupe never answers a key with a job of another tenant.
    DedupeKeepsTenants,
    /// Every posting written balances, per currency.
    LedgerBalanced,
    /// A parent resumes with each child's own answer.
    ChildrenAnswer,
    /// A call retried after an error converges: it is never refused because its first try
    /// half-happened.
    RetriesConverge,
    /// A batch's callback runs only once every member has settled.
    BatchCallbackLast,
    /// A job with dependencies starts only once they are done.
    DependenciesFirst,
    /// The fleet makes progress: no loop of store calls spins without time passing.
    Progress,
    /// A wait answers an event published for its key, and does not time out on one published
    /// well inside its window.
    EventsDelivered,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Which.
    pub invariant: Invariant,
    /// What was seen (ids and names, never an input).
    pub detail: String,
}

/// A job a producer was told was enqueued.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// Its job name.
    pub name: String,
}

/// The facts of one run.
#[derive(Debug, Default)]
pub struct History {
    trace: Trace,
    /// The order of events, for "after".
    seq: u64,
    /// Jobs whose enqueue a producer saw succeed.
    pub accepted: BTreeMap<JobId, Accepted>,
    /// A step's first landed write: its output and when.
    pub commits: BTreeMap<(RunId, String), (serde_json::Value, u64)>,
    /// Runs completed (an ack landed), and how many times.
    pub completions: BTreeMap<(JobId, RunId), u32>,
    /// Cron occurrences fired, per task.
    pub fires: BTreeMap<(String, String), u32>,
    /// Events published, per key: (order, simulated ms, payload).
    pub published: BTreeMap<String, Vec<(u64, u64, serde_json::Value)>>,
    /// The order at which each run's wait was written (a `Waiting` step landed).
    pub waits: BTreeMap<RunId, u64>,
    /// When each run first reached its wait, in simulated ms.
    pub wait_begun: BTreeMap<RunId, u64>,
    /// Postings written: (ledger, tenant, key).
    pub postings: std::collections::BTreeSet<(String, Option<String>, String)>,
    /// Lease grants that have not been released, per key.
    pub leases: BTreeMap<String, Vec<HeldLease>>,
    /// What broke, in the order it was seen.
    pub violations: Vec<Violation>,
    /// Counts for the report.
    pub stats: Stats,
    /// Store calls since simulated time last moved, and when it last moved.
    spin: (u64, u64),
}

/// Counts of what a run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Store calls.
    pub calls: u64,
    /// Calls delayed before they applied.
    pub delayed: u64,
    /// Calls failed before they applied.
    pub failed_before: u64,
    /// Calls that applied and whose reply was lost.
    pub failed_after: u64,
    /// Calls whose reply was delayed.
    pub reply_delayed: u64,
    /// Processes crashed.
    pub crashes: u64,
    /// Clock jumps.
    pub jumps: u64,
    /// Processes frozen.
    pub freezes: u64,
    /// Enqueues accepted.
    pub accepted: u64,
    /// Step bodies run.
    pub bodies: u64,
    /// Operator actions taken.
    pub operator_actions: u64,
}

/// Whether `SIM_TRACE_LIVE` asks for every event on stderr as it happens (a run that hangs
/// prints nothing else).
fn live_trace() -> bool {
    static LIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LIVE.get_or_init(|| std::env::var_os("SIM_TRACE_LIVE").is_some())
}

/// Store calls without time moving that make a livelock.
const SPIN_LIMIT: u64 = 20_000;

/// The running hash of everything that happened, and optionally its lines.
#[derive(Debug, Default)]
struct Trace {
    hasher: DefaultHasher,
    lines: Option<Vec<String>>,
}

impl History {
    /// A history that also keeps its trace's lines (a replay prints them).
    pub fn keeping_lines() -> Self {
        History {
            trace: Trace {
                hasher: DefaultHasher::new(),
                lines: Some(Vec::new()),
            },
            ..History::default()
        }
    }

    /// Notes one event in the trace and answers its place in the order.
    pub fn note(&mut self, line: impl FnOnce() -> String) -> u64 {
        self.seq += 1;
        let line = line();
        if live_trace() {
            eprintln!("{:>7} {line}", self.seq);
        }
        line.hash(&mut self.trace.hasher);
        if let Some(lines) = &mut self.trace.lines {
            lines.push(format!("{:>7} {line}", self.seq));
        }
        self.seq
    }

    /// The place of the next event.
    pub fn now(&self) -> u64 {
        self.seq
    }

    /// The trace's hash: two runs of one seed answer the same.
    pub fn trace_hash(&self) -> u64 {
        self.trace.hasher.finish()
    }

    /// The trace's lines, when kept.
    pub fn lines(&self) -> &[String] {
        self.trace.lines.as_deref().unwrap_or(&[])
    }

    /// Counts a store call at simulated `now_ms`: `true` once 20,000 calls have gone by
    /// without time moving (a livelock, noted once), when the caller must wedge.
    pub fn spinning(&mut self, now_ms: u64) -> bool {
        if self.spin.1 != now_ms {
            self.spin = (0, now_ms);
        }
        self.spin.0 += 1;
        if self.spin.0 == SPIN_LIMIT
            && !self
                .violations
                .iter()
                .any(|v| v.invariant == Invariant::Progress)
        {
            self.violated(
                Invariant::Progress,
                format!("{SPIN_LIMIT} store calls went by at {now_ms} ms without time moving"),
            );
        }
        self.spin.0 >= SPIN_LIMIT
    }

    /// Records a broken invariant.
    pub fn violated(&mut self, invariant: Invariant, detail: String) {
        self.note(|| format!("VIOLATION {invariant}: {detail}"));
        self.violations.push(Violation { invariant, detail });
    }
}
