//! Tasks: cron triggers that only enqueue jobs. `#[task]` implements [`Task`] on a unit struct
//! named after the function; the scheduler fires each occurrence through the one enqueue path.

use std::fmt;

use chrono::{DateTime, NaiveDate, Utc};
use chrono_tz::Tz;

use crate::clock::Timestamp;
use crate::enqueue::Prepared;
use crate::error::JobError;
use crate::job::Job;

/// One job a task fires for an occurrence, built from the job's typed handle and its input
/// type, never from a name.
///
/// ```
/// use jobs::prelude::*;
/// use jobs::Entry;
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Digest { day: String }
///
/// #[job(key = "digest:{day}", tenant = none)]
/// async fn send_digest(_run: Run, _input: Digest) -> Result<(), JobError> { Ok(()) }
///
/// let entry = Entry::of::<SendDigest>(Digest { day: "2030-01-01".into() });
/// assert_eq!(entry.job_name(), "send_digest");
/// ```
#[derive(Debug)]
pub struct Entry {
    job: &'static str,
    prepared: Result<Prepared, JobError>,
}

impl Entry {
    /// The entry for job `J` with `input`. A key rule the input breaks (an empty key, a
    /// concurrency key out of bounds) is reported when the entry fires.
    ///
    /// A job is named by its handle type, never by a string: `#[task]` refuses
    /// `Entry::of("send_digest", input)` at compile time and names the handle to write.
    pub fn of<J: Job>(input: J::Input) -> Entry {
        Entry {
            job: J::DESCRIPTOR.name,
            prepared: Prepared::of::<J>(&input),
        }
    }

    /// The name of the job it fires.
    pub fn job_name(&self) -> &'static str {
        self.job
    }

    /// The job's plain idempotency key (a scheduled fire prefixes it with the occurrence).
    pub fn idempotency_key(&self) -> Option<&str> {
        self.prepared
            .as_ref()
            .ok()
            .map(|p| p.idempotency_key.as_str())
    }

    pub(crate) fn into_prepared(self) -> Result<Prepared, JobError> {
        self.prepared
    }
}

/// What a `#[task]` fn's answer is made of: [`Entry`] values, nothing else. `#[task]` collects
/// the fn's answer through [`collect_entries`], so answering job names (`Vec<&str>`) is refused
/// with this trait's message instead of a `FromIterator` error.
#[diagnostic::on_unimplemented(
    message = "a `#[task]` fn answers the jobs to enqueue as `Entry` values, not `{Self}` (X_JOB_DECLARATION_INVALID)",
    label = "return `Vec<Entry>`",
    note = "build each entry from the job's handle, `Entry::of::<SendDigest>(input)` for the `#[job]` fn `send_digest`; a job is never named by a string"
)]
pub trait IsEntry {
    /// The entry itself.
    fn into_entry(self) -> Entry;
}

impl IsEntry for Entry {
    fn into_entry(self) -> Entry {
        self
    }
}

/// A task fn's answer (any iterable of entries: a `Vec`, an `Option`, an array) as the entries
/// to fire.
pub fn collect_entries<T>(answer: T) -> Vec<Entry>
where
    T: IntoIterator,
    T::Item: IsEntry,
{
    answer.into_iter().map(IsEntry::into_entry).collect()
}

/// What to do about occurrences missed while no scheduler was leading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// Fire only the latest missed occurrence (the default).
    Skip,
    /// Fire the earliest missed occurrence once; the watermark passes the rest.
    RunOnce,
    /// Fire every missed occurrence, at most `max_catch_up` per round.
    RunAll,
}

impl CatchUp {
    /// The policy as declared (`skip`, `run-once`, `run-all`).
    pub const fn as_str(self) -> &'static str {
        match self {
            CatchUp::Skip => "skip",
            CatchUp::RunOnce => "run-once",
            CatchUp::RunAll => "run-all",
        }
    }
}

/// The default bound on `run-all` fires per round.
pub const DEFAULT_MAX_CATCH_UP: u32 = 10;

/// A task as declared, checked at compile time.
#[derive(Debug, Clone, Copy)]
pub struct TaskDescriptor {
    /// The durable name (default: the fn's name).
    pub name: &'static str,
    /// A standard 5-field cron expression.
    pub cron: &'static str,
    /// The IANA zone the cron is read in.
    pub tz: &'static str,
    /// The catch-up policy.
    pub catch_up: CatchUp,
    /// The bound on `run-all` fires per round.
    pub max_catch_up: u32,
}

impl TaskDescriptor {
    /// A descriptor with the default catch-up (`skip`, at most 10).
    pub const fn new(name: &'static str, cron: &'static str, tz: &'static str) -> Self {
        TaskDescriptor {
            name,
            cron,
            tz,
            catch_up: CatchUp::Skip,
            max_catch_up: DEFAULT_MAX_CATCH_UP,
        }
    }
}

/// A declared task. `#[task]` implements it; user code rarely names the trait.
pub trait Task: Send + Sync + 'static {
    /// The declaration.
    const DESCRIPTOR: TaskDescriptor;

    /// The jobs to enqueue for `occurrence`: cheap, synchronous, built from the occurrence
    /// only (never the wall clock). Zero entries is a valid no-op tick.
    fn entries(occurrence: &Occurrence) -> Vec<Entry>;
}

/// One occurrence of a task's schedule: an instant, and the zone the task reads it in.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    at: Timestamp,
    tz: Tz,
}

impl Occurrence {
    /// The occurrence at `at`, read in `tz`.
    pub fn new(at: Timestamp, tz: Tz) -> Self {
        Occurrence { at, tz }
    }

    /// The instant, in UTC.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// The instant in the task's zone.
    pub fn local(&self) -> DateTime<Tz> {
        self.at.with_timezone(&self.tz)
    }

    /// The local date in the task's zone.
    pub fn date(&self) -> NaiveDate {
        self.local().date_naive()
    }

    /// The zone.
    pub fn tz(&self) -> Tz {
        self.tz
    }

    /// Milliseconds since the epoch: the part of a scheduled fire's idempotency key
    /// (`<task>:<occurrence ms>:<job's key>`).
    pub fn timestamp_millis(&self) -> i64 {
        self.at.timestamp_millis()
    }
}

impl fmt::Debug for Occurrence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Occurrence({})", self.local().to_rfc3339())
    }
}

impl From<Occurrence> for DateTime<Utc> {
    fn from(o: Occurrence) -> Self {
        o.at
    }
}

/// One declared task, type-erased for the registry. `#[task]` submits `TaskEntry::of::<Handle>()`.
#[derive(Clone, Copy)]
pub struct TaskEntry {
    descriptor: TaskDescriptor,
    type_name: fn() -> &'static str,
    entries: fn(&Occurrence) -> Vec<Entry>,
}

inventory::collect!(TaskEntry);

impl fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskEntry")
            .field("name", &self.descriptor.name)
            .field("type", &(self.type_name)())
            .finish()
    }
}

impl TaskEntry {
    /// The entry for task `T`.
    pub const fn of<T: Task>() -> Self {
        TaskEntry {
            descriptor: T::DESCRIPTOR,
            type_name: std::any::type_name::<T>,
            entries: T::entries,
        }
    }

    /// The declaration.
    pub fn descriptor(&self) -> &TaskDescriptor {
        &self.descriptor
    }

    /// The entries for `occurrence`.
    pub fn entries(&self, occurrence: &Occurrence) -> Vec<Entry> {
        (self.entries)(occurrence)
    }

    /// The Rust type of the handle (to tell a second registration of one task from another
    /// task under the same name).
    pub fn type_name(&self) -> &'static str {
        (self.type_name)()
    }
}
