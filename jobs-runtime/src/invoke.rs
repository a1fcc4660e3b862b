//! Child jobs awaited in a step: [`Run::invoke`] and [`Run::invoke_all`] enqueue children as a
//! step of the parent (a replayed parent finds them by their ids, derived from the run and the
//! step, and never enqueues twice), park the parent without spending an attempt, and resume it
//! with the children's outcomes once they have settled.
//!
//! The children form a group in the store (`driver/port/records/group.rs`): each child's settle
//! counts once, the count reaching the need wakes the parent, and the parent reads the outcomes
//! back in pages. Resuming a parent of `n` children costs `2 + ceil(n / GROUP_PAGE)` store
//! calls: the group, its pages of members, and the step write.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::clock::{add, Timestamp};
use crate::descriptor::JobOutput;
use crate::driver::{
    every_member, GroupId, GroupJoinParams, GroupMember, GroupNeed, GroupRecord, JobCancelParams,
    JobId, JobState, StepStatus, MAX_GROUP_JOIN,
};
use crate::duration::IntoDuration;
use crate::enqueue::{EnqueueOptions, Prepared};
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::run::Run;

/// A job a parent may invoke: one whose result is kept (`#[job(.., keep_result)]`), so the
/// parent can read it back. `#[job]` implements it for such jobs.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be invoked: it does not keep its result (X_JOB_DECLARATION_INVALID)",
    label = "not a `#[job(.., keep_result)]` handle",
    note = "add `keep_result` to the child's `#[job(..)]`: an invoke resumes its parent with the child's stored result"
)]
pub trait Invocable: Job {}

/// Options shared by the invoke builders.
#[derive(Debug, Default)]
struct InvokeOptions {
    key: Option<String>,
    tenant: Option<Option<String>>,
    queue: Option<String>,
    timeout: Option<Duration>,
    /// A `timeout` that did not parse: the invoke fails with it, before anything is written.
    refused: Option<JobError>,
}

impl InvokeOptions {
    fn timeout(&mut self, timeout: impl IntoDuration, call: &str) {
        match timeout.try_into_duration() {
            Ok(duration) => self.timeout = Some(duration),
            Err(e) => self.refused = Some(e.into_call_error(call, "timeout")),
        }
    }
}

/// The options both invoke builders take, on `$builder` (whose call `$call` names a timeout that
/// does not parse).
macro_rules! invoke_options {
    ($builder:ident, $call:literal) => {
        impl<J: Job> $builder<'_, J> {
            /// The children's tenant (default: the parent's). A tenant other than the one a
            /// child's input derives is refused as an enqueue's is (`X_JOB_TENANT_MISMATCH`).
            pub fn tenant(mut self, tenant: Option<String>) -> Self {
                self.options.tenant = Some(tenant);
                self
            }

            /// The children's queue (default: their declared one).
            pub fn queue(mut self, queue: impl Into<String>) -> Self {
                self.options.queue = Some(queue.into());
                self
            }

            /// How long the parent waits: past it the children still live are cancelled and
            /// answer `X_JOB_TIMEOUT`. Default: no limit.
            pub fn timeout(mut self, timeout: impl IntoDuration) -> Self {
                self.options.timeout(timeout, $call);
                self
            }
        }
    };
}

/// One child, awaited: [`Run::invoke`]. Await it for the child's output, or the child's error
/// (its code and retry class, [`JobError::code`] and [`JobError::class`]) when it ended
/// `failed`, `dead` or `cancelled` (`X_JOB_CANCELLED`), or did not settle within the timeout
/// (`X_JOB_TIMEOUT`; the child is then cancelled).
#[must_use = "an invoke does nothing until it is awaited"]
pub struct Invoke<'r, J: Job> {
    run: &'r Run,
    input: J::Input,
    options: InvokeOptions,
    _job: PhantomData<fn() -> J>,
}

impl<J: Job> Invoke<'_, J> {
    /// The child's idempotency key, in place of the one its input derives: an invoke that meets
    /// a live job holding it awaits that job.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.options.key = Some(key.into());
        self
    }
}

invoke_options!(Invoke, "run.invoke");

impl<'r, J> IntoFuture for Invoke<'r, J>
where
    J: Invocable,
    J::Output: JobOutput,
{
    type Output = Result<J::Output, JobError>;
    type IntoFuture = BoxFuture<'r, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let outcomes = self
                .run
                .invoke_group::<J>(vec![self.input], self.options, None)
                .await?;
            let outcome = outcomes.into_iter().next().flatten();
            match outcome {
                Some(outcome) => outcome.decode::<J::Output>(),
                None => Err(JobError::new(
                    ErrorCode::Invariant,
                    "an invoke resumed without its child's outcome",
                )),
            }
        })
    }
}

/// Many children, awaited together: [`Run::invoke_all`]. Await it for every child's outcome in
/// the order of the inputs, or narrow it to the first `n` to settle with
/// [`InvokeAll::first`].
#[must_use = "an invoke does nothing until it is awaited"]
pub struct InvokeAll<'r, J: Job> {
    run: &'r Run,
    inputs: Vec<J::Input>,
    options: InvokeOptions,
    _job: PhantomData<fn() -> J>,
}

invoke_options!(InvokeAll, "run.invoke_all");

impl<'r, J: Job> InvokeAll<'r, J> {
    /// Resumes the parent once `n` children have settled (however each ended): the answer has
    /// one place per input, `None` where a child had not settled, and those children are
    /// cancelled. `n` above the number of inputs waits for all of them.
    pub fn first(self, n: usize) -> InvokeFirst<'r, J> {
        InvokeFirst { all: self, n }
    }
}

impl<'r, J> IntoFuture for InvokeAll<'r, J>
where
    J: Invocable,
    J::Output: JobOutput,
{
    type Output = Result<Vec<Result<J::Output, JobError>>, JobError>;
    type IntoFuture = BoxFuture<'r, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let outcomes = self
                .run
                .invoke_group::<J>(self.inputs, self.options, None)
                .await?;
            Ok(outcomes
                .into_iter()
                .map(|o| match o {
                    Some(o) => o.decode::<J::Output>(),
                    None => Err(JobError::new(
                        ErrorCode::Invariant,
                        "a child counted as settled was live again when its parent resumed (requeued?)",
                    )),
                })
                .collect())
        })
    }
}

/// The first `n` children to settle: [`InvokeAll::first`].
#[must_use = "an invoke does nothing until it is awaited"]
pub struct InvokeFirst<'r, J: Job> {
    all: InvokeAll<'r, J>,
    n: usize,
}

impl<'r, J> IntoFuture for InvokeFirst<'r, J>
where
    J: Invocable,
    J::Output: JobOutput,
{
    type Output = Result<Vec<Option<Result<J::Output, JobError>>>, JobError>;
    type IntoFuture = BoxFuture<'r, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let InvokeFirst { all, n } = self;
            let need = n.min(all.inputs.len());
            let outcomes = all
                .run
                .invoke_group::<J>(all.inputs, all.options, Some(need))
                .await?;
            Ok(outcomes
                .into_iter()
                .map(|o| o.map(|o| o.decode::<J::Output>()))
                .collect())
        })
    }
}

impl<J: Job> std::fmt::Debug for Invoke<'_, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invoke")
            .field("child", &J::DESCRIPTOR.name)
            .field("options", &self.options)
            .finish()
    }
}

impl<J: Job> std::fmt::Debug for InvokeAll<'_, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvokeAll")
            .field("child", &J::DESCRIPTOR.name)
            .field("children", &self.inputs.len())
            .field("options", &self.options)
            .finish()
    }
}

impl<J: Job> std::fmt::Debug for InvokeFirst<'_, J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InvokeFirst")
            .field("all", &self.all)
            .field("n", &self.n)
            .finish()
    }
}

/// How one child ended, as the parent's step stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ChildOutcome {
    /// `done`, with its kept result.
    Ok(Value),
    /// Anything else, with the error the parent gets.
    Err {
        code: Option<String>,
        message: String,
    },
}

impl ChildOutcome {
    fn decode<O: JobOutput>(self) -> Result<O, JobError> {
        match self {
            ChildOutcome::Ok(value) => serde_json::from_value(value).map_err(|e| {
                JobError::new(
                    ErrorCode::JobResultInvalid,
                    format!(
                        "a child's result no longer parses as its output type: {}",
                        crate::error::redact_serde(&e)
                    ),
                )
            }),
            ChildOutcome::Err { code, message } => {
                let code = code
                    .as_deref()
                    .and_then(ErrorCode::parse)
                    .unwrap_or(ErrorCode::JobChildFailed);
                Err(JobError::new(code, message))
            }
        }
    }

    /// The outcome of a settled member; `None` while it is live.
    fn of(job: &str, member: &GroupMember) -> Option<ChildOutcome> {
        let id = member.id;
        let failed = |code: Option<String>, how: &str| ChildOutcome::Err {
            code,
            message: match &member.last_error {
                Some(error) => format!("child job `{job}` {id} {how}: {error}"),
                None => format!("child job `{job}` {id} {how}"),
            },
        };
        match member.state {
            Some(JobState::Done) => Some(ChildOutcome::Ok(
                member.result.clone().unwrap_or(Value::Null),
            )),
            Some(JobState::Cancelled) => Some(failed(
                Some(ErrorCode::JobCancelled.as_str().to_string()),
                "was cancelled",
            )),
            Some(state @ (JobState::Failed | JobState::Dead)) => Some(failed(
                member.last_error_code.clone(),
                &format!("ended {state}"),
            )),
            Some(_) => None,
            None => Some(failed(
                Some(ErrorCode::JobChildFailed.as_str().to_string()),
                "was removed before its parent read it",
            )),
        }
    }

    fn timed_out(job: &str, id: JobId, timeout: Option<Duration>) -> ChildOutcome {
        let within = timeout
            .map(|t| {
                format!(
                    " within the invoke's timeout of {}",
                    humantime::format_duration(t)
                )
            })
            .unwrap_or_default();
        ChildOutcome::Err {
            code: Some(ErrorCode::JobTimeout.as_str().to_string()),
            message: format!("child job `{job}` {id} did not settle{within}; it was cancelled"),
        }
    }
}

/// What a parked invoke's step record holds until it completes.
#[derive(Debug, Serialize, Deserialize)]
struct Awaiting {
    group: GroupId,
    deadline: Option<Timestamp>,
    timeout_ms: Option<u64>,
}

impl Run {
    /// Invokes the job `J` with `input` as a child of this run, and awaits it: the child is
    /// enqueued durably as the step `invoke:<child name>` (`#2`, `#3`... for later ones), the
    /// run parks without holding a worker or spending an attempt, and it resumes with the
    /// child's output, or its error, once the child has settled. A replayed parent reads the
    /// stored outcome and never enqueues the child twice. Options: [`Invoke::key`],
    /// [`Invoke::tenant`] (the parent's by default), [`Invoke::queue`], [`Invoke::timeout`].
    ///
    /// The child must keep its result (`#[job(.., keep_result)]`); otherwise this does not
    /// compile. Cancelling the parent cancels the child; cancelling the child resumes the
    /// parent with `X_JOB_CANCELLED`.
    ///
    /// ```no_run
    /// use jobs::prelude::*;
    ///
    /// #[derive(Serialize, Deserialize, JsonSchema)]
    /// struct Quote { sku: String }
    ///
    /// #[job(key = "price:{sku}", tenant = none, keep_result)]
    /// async fn price(_run: Run, input: Quote) -> Result<u64, JobError> {
    ///     Ok(input.sku.len() as u64 * 100)
    /// }
    ///
    /// #[derive(Serialize, Deserialize, JsonSchema)]
    /// struct Order { id: u64, sku: String }
    ///
    /// #[job(key = "order:{id}", tenant = none)]
    /// async fn checkout(run: Run, order: Order) -> Result<(), JobError> {
    ///     let cents = run.invoke(Price, Quote { sku: order.sku }).timeout("1h").await?;
    ///     run.step("charge", async move { Ok::<_, JobError>(cents) }).await?;
    ///     Ok(())
    /// }
    /// ```
    pub fn invoke<J: Invocable>(&self, _job: J, input: J::Input) -> Invoke<'_, J> {
        Invoke {
            run: self,
            input,
            options: InvokeOptions::default(),
            _job: PhantomData,
        }
    }

    /// Invokes `J` once per input as children of this run, and awaits them all: the answer
    /// holds each child's output or error in the order of the inputs ([`InvokeAll::first`]
    /// narrows it to the first `n` to settle). One step (`invoke:<child name>`) enqueues them
    /// all, at most [`MAX_GROUP_JOIN`]; the parent is woken once, when the last one settles.
    ///
    /// ```no_run
    /// # use jobs::prelude::*;
    /// # #[derive(Serialize, Deserialize, JsonSchema)] struct Quote { sku: String }
    /// # #[job(key = "price:{sku}", tenant = none, keep_result)]
    /// # async fn price(_run: Run, input: Quote) -> Result<u64, JobError> { Ok(1) }
    /// # #[derive(Serialize, Deserialize, JsonSchema)] struct Cart { id: u64, skus: Vec<String> }
    /// #[job(key = "cart:{id}", tenant = none)]
    /// async fn total(run: Run, cart: Cart) -> Result<(), JobError> {
    ///     let quotes = cart.skus.into_iter().map(|sku| Quote { sku });
    ///     let prices = run.invoke_all(Price, quotes).await?;
    ///     let sum: u64 = prices.into_iter().collect::<Result<Vec<_>, _>>()?.iter().sum();
    ///     run.step("record", async move { Ok::<_, JobError>(sum) }).await?;
    ///     Ok(())
    /// }
    /// ```
    pub fn invoke_all<J: Invocable>(
        &self,
        _job: J,
        inputs: impl IntoIterator<Item = J::Input>,
    ) -> InvokeAll<'_, J> {
        InvokeAll {
            run: self,
            inputs: inputs.into_iter().collect(),
            options: InvokeOptions::default(),
            _job: PhantomData,
        }
    }

    /// The invoke step: enqueue and join the children on its first pass, then resume from the
    /// group. Answers one place per input (`None`: not settled, when `need` is below all).
    async fn invoke_group<J: Job>(
        &self,
        inputs: Vec<J::Input>,
        options: InvokeOptions,
        need: Option<usize>,
    ) -> Result<Vec<Option<ChildOutcome>>, JobError> {
        let child = J::DESCRIPTOR.name;
        if let Some(refused) = options.refused {
            return Err(refused);
        }
        if J::DESCRIPTOR.result.is_none() {
            return Err(JobError::new(
                ErrorCode::JobDeclarationInvalid,
                format!("job `{child}` is invoked but does not keep its result"),
            )
            .with_fix("declare the child `#[job(.., keep_result)]`"));
        }
        if inputs.len() > MAX_GROUP_JOIN {
            return Err(JobError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "one invoke of job `{child}` names {} children, over the limit of {MAX_GROUP_JOIN} (jobs::driver::MAX_GROUP_JOIN)",
                    inputs.len()
                ),
            )
            .with_fix("invoke them in several steps, or enqueue them as a batch"));
        }
        let name = self.derived_name(&format!("invoke:{child}"));
        let previous = self.enter(&name)?;
        let size = inputs.len();
        let need = need.unwrap_or(size).min(size);
        let (awaiting, joined) = match previous {
            Some(r) if r.status == StepStatus::Completed => {
                return decode_outcomes(&name, r.output);
            }
            Some(r) if r.status == StepStatus::Waiting => {
                let awaiting = serde_json::from_value::<Awaiting>(r.output.unwrap_or(Value::Null))
                    .map_err(|e| {
                        JobError::new(
                            ErrorCode::StepRecordInvalid,
                            format!(
                                "the stored state of step `{name}` no longer parses: {}",
                                crate::error::redact_serde(&e)
                            ),
                        )
                    })?;
                (awaiting, None)
            }
            _ => {
                if size == 0 {
                    return Ok(Vec::new());
                }
                let (awaiting, group) = self
                    .start_children::<J>(&name, inputs, &options, need)
                    .await?;
                (awaiting, Some(group))
            }
        };
        let group = match joined {
            Some(group) => group,
            None => self
                .driver()
                .job_group_get(awaiting.group)
                .await?
                .ok_or_else(|| {
                    JobError::new(
                        ErrorCode::Invariant,
                        format!("the children of step `{name}` are not in the store"),
                    )
                })?,
        };
        let now = self.now();
        let timed_out = awaiting.deadline.is_some_and(|d| now >= d);
        if !group.is_done() && !timed_out {
            let poll = add(now, self.event_poll());
            let until = awaiting.deadline.map_or(poll, |d| d.min(poll));
            return Err(self.park_on(group.id, until));
        }
        let outcomes = self.collect(child, &group, &awaiting).await?;
        let stored = serde_json::to_value(&outcomes).map_err(|e| {
            JobError::new(
                ErrorCode::StepOutputUnserializable,
                format!("the outcomes of step `{name}` cannot be stored: {e}"),
            )
        })?;
        self.write(&name, 1, |r| {
            r.status = StepStatus::Completed;
            r.output = Some(stored);
            r.wait = None;
        })
        .await?;
        Ok(outcomes)
    }

    /// The invoke's first pass: the children enqueued under ids derived from the run and the
    /// step (so a replay meets them), joined to their group, and the step recorded `waiting`.
    async fn start_children<J: Job>(
        &self,
        name: &str,
        inputs: Vec<J::Input>,
        options: &InvokeOptions,
        need: usize,
    ) -> Result<(Awaiting, GroupRecord), JobError> {
        self.refuse_if_cancelled()?;
        self.refuse_if_claim_lapsed(name)?;
        let group = Uuid::new_v5(&self.run_id(), name.as_bytes());
        let now = self.now();
        let tenant = options
            .tenant
            .clone()
            .unwrap_or_else(|| self.tenant().map(str::to_string));
        let mut requests = Vec::with_capacity(inputs.len());
        for (position, input) in inputs.iter().enumerate() {
            let mut prepared = Prepared::of::<J>(input)?;
            if let Some(key) = &options.key {
                prepared.idempotency_key = key.clone();
            }
            let mut call = EnqueueOptions::new()
                .job_id(child_id(group, position))
                .tenant(tenant.clone())
                .actor(format!("job:{}", self.job_id()))
                .direct();
            if let Some(queue) = &options.queue {
                call = call.queue(queue.clone());
            }
            requests.push(prepared.into_request(&call, now)?);
        }
        refuse_shared_keys(J::DESCRIPTOR.name, &requests)?;
        let members: Vec<JobId> =
            crate::enqueue::send_many(&**self.driver(), self.local_wake(), &mut requests)
                .await?
                .into_iter()
                .map(|e| e.id)
                .collect();
        let group_record = self
            .driver()
            .job_group_join(&GroupJoinParams {
                group,
                waiter: self.job_id(),
                parent: Some(self.job_id()),
                members: &members,
                need: GroupNeed::Count(need as u32),
                now,
            })
            .await?;
        let awaiting = Awaiting {
            group,
            deadline: options.timeout.map(|t| add(now, t)),
            timeout_ms: options.timeout.map(|t| t.as_millis() as u64),
        };
        let stored = serde_json::to_value(&awaiting).unwrap_or(Value::Null);
        self.write(name, 1, |r| {
            r.status = StepStatus::Waiting;
            r.output = Some(stored);
        })
        .await?;
        Ok((awaiting, group_record))
    }

    /// Reads every member back and cancels the ones still live (past the
    /// timeout, or beyond the first `n`).
    async fn collect(
        &self,
        child: &str,
        group: &GroupRecord,
        awaiting: &Awaiting,
    ) -> Result<Vec<Option<ChildOutcome>>, JobError> {
        let timeout = awaiting.timeout_ms.map(Duration::from_millis);
        let past_deadline = !group.is_done();
        // Past the deadline, or beyond the first `n`, the children still live are cancelled.
        let cancel_live = past_deadline || group.need.is_some_and(|need| need < group.size);
        let mut outcomes = Vec::with_capacity(group.size as usize);
        let mut live = Vec::new();
        for member in every_member(&**self.driver(), group.id).await? {
            let outcome = ChildOutcome::of(child, &member);
            if outcome.is_none() {
                live.push(member.id);
            }
            outcomes.push(match outcome {
                None if past_deadline => Some(ChildOutcome::timed_out(child, member.id, timeout)),
                other => other,
            });
        }
        for id in live.into_iter().filter(|_| cancel_live) {
            let cancel = JobCancelParams {
                reason: None,
                id,
                actor: Some(format!("job:{}", self.job_id())),
                now: self.now(),
            };
            // One that settled meanwhile is not cancellable; its outcome was read as live.
            let _ = self.driver().job_cancel(&cancel).await;
        }
        Ok(outcomes)
    }
}

/// Two children of one invoke deriving one key would be one job in two places: refused before
/// anything is enqueued, naming the positions, never the key.
fn refuse_shared_keys(
    child: &str,
    requests: &[crate::driver::EnqueueRequest],
) -> Result<(), JobError> {
    let mut seen = std::collections::HashMap::with_capacity(requests.len());
    for (position, request) in requests.iter().enumerate() {
        let key = (&request.tenant_id, &request.idempotency_key);
        if let Some(first) = seen.insert(key, position) {
            return Err(JobError::new(
                ErrorCode::Invariant,
                format!(
                    "children {first} and {position} of one invoke of job `{child}` derive the same idempotency key; nothing was enqueued"
                ),
            )
            .with_fix("give each child of one invoke an input that derives its own key"));
        }
    }
    Ok(())
}

/// The id of an invoke's child at `position`, derived from its group.
fn child_id(group: GroupId, position: usize) -> JobId {
    Uuid::new_v5(&group, position.to_string().as_bytes())
}

fn decode_outcomes(
    name: &str,
    output: Option<Value>,
) -> Result<Vec<Option<ChildOutcome>>, JobError> {
    serde_json::from_value(output.unwrap_or(Value::Null)).map_err(|e| {
        JobError::new(
            ErrorCode::StepRecordInvalid,
            format!(
                "the stored outcomes of step `{name}` no longer parse: {}",
                crate::error::redact_serde(&e)
            ),
        )
    })
}
