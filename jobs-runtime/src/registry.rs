//! The link-time registry of declared jobs and tasks. Every `#[job]` submits one [`JobEntry`],
//! every `#[task]` one [`TaskEntry`]; a worker, a scheduler and [`manifest()`](crate::manifest())
//! read them all without a hand-written list.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use futures::future::BoxFuture;
use serde::Deserialize;

use crate::descriptor::JobDescriptor;
use crate::driver::{JobId, RunId};
use crate::enqueue::Prepared;
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::limits::{check_concurrency_key, check_rate_key};
use crate::run::Run;
use crate::settled::{Outcome, Settled};
use crate::task::{Task, TaskEntry};

/// What a body returned, type-erased; only its own job's hook looks inside.
pub(crate) type ErasedOutput = Box<dyn Any + Send>;

/// A job's body bound to its typed input, waiting for its [`Run`].
pub(crate) type ErasedBody =
    Box<dyn FnOnce(Run) -> BoxFuture<'static, Result<ErasedOutput, JobError>> + Send>;

/// One declared job, type-erased for the registry. `#[job]` submits `JobEntry::of::<Handle>()`.
#[derive(Clone, Copy)]
pub struct JobEntry {
    descriptor: JobDescriptor,
    type_name: fn() -> &'static str,
    parse: fn(&serde_json::Value, Option<&String>) -> ParsedInput,
    prepare: fn(&serde_json::Value) -> Result<Prepared, JobError>,
    on_settled: fn(ErasedSettled<'_>) -> BoxFuture<'static, Result<(), JobError>>,
}

inventory::collect!(JobEntry);

impl std::fmt::Debug for JobEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobEntry")
            .field("name", &self.descriptor.name)
            .field("type", &(self.type_name)())
            .finish()
    }
}

/// A claimed job's stored input, parsed once for its attempt: everything admission, the body
/// and the ending hook derive from it.
pub(crate) struct ParsedInput {
    /// The run's tenant: the declaration's `tenant` over the input. The row's own `tenant_id`
    /// is the enqueuer's bucket (an enqueue may override it), never the run's authority; it is
    /// used only when the payload no longer parses.
    pub tenant: Option<String>,
    /// The typed body and key, or why there are none: the payload no longer parses
    /// (`X_JOB_INPUT_INVALID`, terminal: the job is dead-lettered, the worker carries on), or
    /// its concurrency key is refused (`X_JOB_DECLARATION_INVALID`).
    pub typed: Result<Typed, JobError>,
}

/// What a payload that parses yields.
pub(crate) struct Typed {
    /// The body over the typed input.
    pub body: ErasedBody,
    /// The key a keyed concurrency cap counts the run under, checked as at enqueue; `None`
    /// when the job declares no keyed cap.
    pub key: Option<String>,
    /// The key a keyed rate limit counts the run's start under, checked as at enqueue; `None`
    /// when the job declares no keyed rate.
    pub rate_key: Option<String>,
}

/// An ending, before its input and result are given back their types.
pub(crate) struct ErasedSettled<'a> {
    pub outcome: Outcome,
    pub job_id: JobId,
    pub run_id: RunId,
    pub tenant: Option<String>,
    /// The stored input; the hook's typed copy is parsed from it (the body owned the first).
    pub input: &'a serde_json::Value,
    pub result: Option<ErasedOutput>,
    pub error: Option<String>,
    pub code: Option<ErrorCode>,
}

impl JobEntry {
    /// The entry for job `J`.
    pub const fn of<J: Job>() -> Self {
        JobEntry {
            descriptor: J::DESCRIPTOR,
            type_name: std::any::type_name::<J>,
            parse: parse::<J>,
            prepare: prepare::<J>,
            on_settled: on_settled::<J>,
        }
    }

    /// The declaration.
    pub fn descriptor(&self) -> &JobDescriptor {
        &self.descriptor
    }

    /// Parses the stored input, once per attempt, into the typed body and the tenant and
    /// concurrency key derived from it. `row_tenant` stands in when the payload no longer
    /// parses.
    pub(crate) fn parse(
        &self,
        input: &serde_json::Value,
        row_tenant: Option<&String>,
    ) -> ParsedInput {
        (self.parse)(input, row_tenant)
    }

    /// An enqueue of this job from an untyped input (the dashboard's form): the input must
    /// parse as the job's input type (`X_JOB_INPUT_INVALID`), then the typed rules apply.
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn prepare(&self, input: &serde_json::Value) -> Result<Prepared, JobError> {
        (self.prepare)(input)
    }

    /// The key a keyed concurrency cap would count a run of `input` under (`None`: no keyed
    /// cap, or the input no longer parses).
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn concurrency_key(&self, input: &serde_json::Value) -> Option<String> {
        self.parse(input, None)
            .typed
            .ok()
            .and_then(|typed| typed.key)
    }

    /// The key a keyed rate limit would count a run of `input` under (`None`: no keyed rate,
    /// or the input no longer parses).
    #[cfg_attr(not(feature = "dashboard"), allow(dead_code))]
    pub(crate) fn rate_key(&self, input: &serde_json::Value) -> Option<String> {
        self.parse(input, None)
            .typed
            .ok()
            .and_then(|typed| typed.rate_key)
    }

    /// Runs the `on_settled` hook once, over its own typed copy of the input.
    pub(crate) fn on_settled(
        &self,
        settled: ErasedSettled<'_>,
    ) -> BoxFuture<'static, Result<(), JobError>> {
        (self.on_settled)(settled)
    }
}

fn parse_input<J: Job>(input: &serde_json::Value) -> Result<J::Input, JobError> {
    J::Input::deserialize(input).map_err(|e| {
        // serde's message names the field and the expected type, never the value.
        JobError::new(
            ErrorCode::JobInputInvalid,
            format!(
                "the stored input of job `{}` no longer parses as `{}`: {}",
                J::DESCRIPTOR.name,
                J::DESCRIPTOR.input_type,
                crate::error::redact_serde(&e)
            ),
        )
    })
}

fn prepare<J: Job>(input: &serde_json::Value) -> Result<Prepared, JobError> {
    let typed = J::Input::deserialize(input).map_err(|e| {
        // serde's message names the field and the expected type, never the value.
        JobError::new(
            ErrorCode::JobInputInvalid,
            format!(
                "the input given for job `{}` does not parse as `{}`: {}",
                J::DESCRIPTOR.name,
                J::DESCRIPTOR.input_type,
                crate::error::redact_serde(&e)
            ),
        )
        .with_fix("give every field the schema requires, each of its type")
    })?;
    Prepared::of::<J>(&typed)
}

/// The one typed call of an attempt: deserializes the input, derives the tenant and the
/// concurrency and rate keys from it, and binds it to the body.
fn parse<J: Job>(input: &serde_json::Value, row_tenant: Option<&String>) -> ParsedInput {
    let input = match parse_input::<J>(input) {
        Ok(input) => input,
        Err(error) => {
            return ParsedInput {
                tenant: row_tenant.cloned(),
                typed: Err(error),
            }
        }
    };
    let tenant = J::tenant(&input);
    // The keys a keyed cap and a keyed rate count under, each checked as at enqueue.
    let name = J::DESCRIPTOR.name;
    let keyed_cap = J::DESCRIPTOR.concurrency.is_some_and(|cap| cap.keyed);
    let keyed_rate = J::DESCRIPTOR.rate.is_some_and(|rate| rate.keyed);
    let key = keyed_cap.then(|| check_concurrency_key(name, J::concurrency_key(&input)));
    let rate_key = keyed_rate.then(|| check_rate_key(name, J::rate_key(&input)));
    let (key, rate_key) = match (key.transpose(), rate_key.transpose()) {
        (Ok(key), Ok(rate_key)) => (key, rate_key),
        (Err(error), _) | (_, Err(error)) => {
            return ParsedInput {
                tenant,
                typed: Err(error),
            }
        }
    };
    let body: ErasedBody = Box::new(move |run| {
        Box::pin(async move {
            let output = J::run(run, input).await?;
            Ok(Box::new(output) as ErasedOutput)
        })
    });
    ParsedInput {
        tenant,
        typed: Ok(Typed {
            body,
            key,
            rate_key,
        }),
    }
}

fn on_settled<J: Job>(settled: ErasedSettled<'_>) -> BoxFuture<'static, Result<(), JobError>> {
    let typed = Settled {
        outcome: settled.outcome,
        job_id: settled.job_id,
        run_id: settled.run_id,
        tenant: settled.tenant,
        input: parse_input::<J>(settled.input).ok(),
        result: settled
            .result
            .and_then(|r| r.downcast::<J::Output>().ok())
            .map(|r| *r),
        error: settled.error,
        code: settled.code,
    };
    J::on_settled(typed)
}

/// A set of jobs and tasks by name, with the duplicate-name rule enforced across both: a job
/// and a task never share a name.
#[derive(Clone, Default)]
pub struct Registry {
    /// Shared: a worker's attempt holds its job's entry (a couple of hundred bytes) by
    /// reference count, not by copy, through every stage.
    jobs: BTreeMap<&'static str, Arc<JobEntry>>,
    tasks: BTreeMap<&'static str, TaskEntry>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("jobs", &self.jobs.keys().collect::<Vec<_>>())
            .field("tasks", &self.tasks.keys().collect::<Vec<_>>())
            .finish()
    }
}

static GLOBAL: OnceLock<Result<Registry, String>> = OnceLock::new();

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every `#[job]` and `#[task]` linked into this binary. Two of them under one name are
    /// `X_JOB_DUPLICATE`.
    pub fn global() -> Result<&'static Registry, JobError> {
        GLOBAL
            .get_or_init(|| {
                let mut registry = Registry::new();
                for entry in inventory::iter::<JobEntry> {
                    registry.add(*entry).map_err(|e| e.message().to_string())?;
                }
                for entry in inventory::iter::<TaskEntry> {
                    registry
                        .add_task(*entry)
                        .map_err(|e| e.message().to_string())?;
                }
                Ok(registry)
            })
            .as_ref()
            .map_err(|message| JobError::new(ErrorCode::JobDuplicate, message.clone()))
    }

    /// Adds job `J`. Adding the same job twice is one registration; another job under the same
    /// name is `X_JOB_DUPLICATE`.
    pub fn register<J: Job>(&mut self) -> Result<&mut Self, JobError> {
        self.add(JobEntry::of::<J>())?;
        Ok(self)
    }

    /// Adds task `T`, under the same rule as [`Registry::register`] (a job and a task never
    /// share a name either).
    pub fn register_task<T: Task>(&mut self) -> Result<&mut Self, JobError> {
        self.add_task(TaskEntry::of::<T>())?;
        Ok(self)
    }

    fn add_task(&mut self, entry: TaskEntry) -> Result<(), JobError> {
        let name = entry.descriptor().name;
        if let Some(existing) = self.tasks.get(name) {
            if existing.type_name() == entry.type_name() {
                return Ok(());
            }
            return Err(duplicate(
                name,
                "two tasks",
                existing.type_name(),
                entry.type_name(),
            ));
        }
        if let Some(job) = self.jobs.get(name) {
            return Err(duplicate(
                name,
                "a job and a task",
                (job.type_name)(),
                entry.type_name(),
            ));
        }
        self.tasks.insert(name, entry);
        Ok(())
    }

    /// The task declared under `name`.
    pub fn task(&self, name: &str) -> Option<&TaskEntry> {
        self.tasks.get(name)
    }

    /// Every task, sorted by name (byte order).
    pub fn tasks(&self) -> impl Iterator<Item = &TaskEntry> {
        self.tasks.values()
    }

    fn add(&mut self, entry: JobEntry) -> Result<(), JobError> {
        let name = entry.descriptor.name;
        if let Some(task) = self.tasks.get(name) {
            return Err(duplicate(
                name,
                "a task and a job",
                task.type_name(),
                (entry.type_name)(),
            ));
        }
        if let Some(existing) = self.jobs.get(name) {
            if (existing.type_name)() == (entry.type_name)() {
                return Ok(());
            }
            return Err(JobError::new(
                ErrorCode::JobDuplicate,
                format!(
                    "two jobs are declared under the name `{name}`: `{}` and `{}`",
                    (existing.type_name)(),
                    (entry.type_name)()
                ),
            )
            .with_fix("give one of them its own `#[job(name = \"..\")]`"));
        }
        self.jobs.insert(name, Arc::new(entry));
        Ok(())
    }

    /// The job declared under `name`.
    pub fn get(&self, name: &str) -> Option<&JobEntry> {
        self.jobs.get(name).map(|entry| &**entry)
    }

    /// [`Registry::get`], shared.
    pub(crate) fn get_shared(&self, name: &str) -> Option<Arc<JobEntry>> {
        self.jobs.get(name).cloned()
    }

    /// Every job, sorted by name (byte order).
    pub fn entries(&self) -> impl Iterator<Item = &JobEntry> {
        self.jobs.values().map(|entry| &**entry)
    }

    /// How many jobs (tasks are counted apart: `tasks().count()`).
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// Whether there are no jobs.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
}

fn duplicate(name: &str, what: &str, first: &str, second: &str) -> JobError {
    JobError::new(
        ErrorCode::JobDuplicate,
        format!("{what} are declared under the name `{name}`: `{first}` and `{second}`"),
    )
    .with_fix("give one of them its own `name = \"..\"`")
}
