//! Batches: a set of jobs with a callback job that runs once when every member has settled.
//! [`Jobs::batch`] enqueues the callback (due at [`blocked_until`]: never claimed early) and
//! opens the batch; [`Batch::add`] enqueues members into it while it is open, from any
//! process ([`Jobs::open_batch`]); [`Batch::close`] says no more will come. The store counts
//! each member's settle once (`driver/port/records/group.rs`), and the count reaching the
//! batch's size once it is closed makes the callback due. The callback reads how its batch
//! went with [`Run::batch`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::client::{Enqueued, Jobs};
use crate::driver::{
    blocked_until, every_member, GroupId, GroupJoinParams, GroupNeed, GroupRecord, JobDriver,
    JobId, JobState, MAX_GROUP_JOIN,
};
use crate::enqueue::EnqueueOptions;
use crate::error::{ErrorCode, JobError};
use crate::job::Job;
use crate::run::Run;

/// An open batch: add members, then close it. Cheap to clone; holds no connection.
///
/// ```no_run
/// use jobs::prelude::*;
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Customer { id: u64 }
///
/// #[job(key = "invoice:{id}", tenant = none)]
/// async fn invoice(_run: Run, _c: Customer) -> Result<(), JobError> { Ok(()) }
///
/// #[derive(Serialize, Deserialize, JsonSchema)]
/// struct Month { month: String }
///
/// #[job(key = "report:{month}", tenant = none)]
/// async fn report(run: Run, _m: Month) -> Result<(), JobError> {
///     let batch = run.batch().await?.expect("a batch's callback");
///     println!("{} invoiced, {} failed", batch.done, batch.failed.len());
///     Ok(())
/// }
///
/// # async fn demo(jobs: Jobs) -> Result<(), JobError> {
/// let batch = jobs.batch::<Report>(Month { month: "2026-11".into() }).await?;
/// batch.add::<Invoice, _>((1..=3).map(|id| Customer { id })).await?;
/// batch.close().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Batch {
    jobs: Jobs,
    id: GroupId,
    callback: JobId,
}

/// How a batch stands: its counts, and the members that did not complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchReport {
    /// The batch.
    pub id: GroupId,
    /// Its callback job.
    pub callback: JobId,
    /// Whether it was closed (no more members may be added).
    pub closed: bool,
    /// Members added.
    pub size: u32,
    /// Members settled (however each ended).
    pub settled: u32,
    /// Members `done`.
    pub done: u32,
    /// Members that ended `failed` or `dead` (or were removed), by id in join order.
    pub failed: Vec<JobId>,
    /// Members `cancelled`, by id in join order.
    pub cancelled: Vec<JobId>,
    /// Members per state, as the store holds them now (`gone` for removed rows).
    pub states: BTreeMap<String, u32>,
}

impl Jobs {
    /// Opens a batch whose callback is the job `C` with `input`: it runs once every member
    /// has settled, after [`Batch::close`]. The callback is enqueued now, due at
    /// [`blocked_until`] (so it shows as waiting and is never claimed early), and is made due
    /// the moment the closed batch's last member settles.
    ///
    /// The callback's key names the batch: an open whose callback key the live callback of a
    /// batch already holds answers that batch, so an open retried after an error converges
    /// (its first try may have enqueued the callback and lost the rest). A live job holding the
    /// key that is no batch's callback is refused with `X_JOB_DUPLICATE`.
    pub async fn batch<C: Job>(&self, input: C::Input) -> Result<Batch, JobError> {
        let options = EnqueueOptions::new().run_at(blocked_until()).direct();
        let callback = self.enqueue_with::<C>(input, options).await?;
        // The batch's id follows from its callback's, so a retried open finds the same one.
        let batch = Batch {
            jobs: self.clone(),
            id: batch_id(callback.id),
            callback: callback.id,
        };
        if callback.deduped
            && (planted!(BatchOpenRefusesItsCallback) || !batch.is_its_callback().await?)
        {
            return Err(JobError::new(
                ErrorCode::JobDuplicate,
                format!(
                    "a live `{}` job already holds the callback's key: a batch needs a callback of its own",
                    C::DESCRIPTOR.name
                ),
            )
            .with_fix("give the callback an input whose key no live job holds"));
        }
        batch.join(&[], GroupNeed::Keep).await?;
        Ok(batch)
    }

    /// A batch opened elsewhere, to add to or close it. `X_JOB_NOT_FOUND` for an unknown id.
    pub async fn open_batch(&self, id: GroupId) -> Result<Batch, JobError> {
        let group = self.group(id).await?;
        Ok(Batch {
            jobs: self.clone(),
            id,
            callback: group.waiter,
        })
    }

    /// How the batch `id` stands. `X_JOB_NOT_FOUND` for an unknown id.
    pub async fn batch_report(&self, id: GroupId) -> Result<BatchReport, JobError> {
        let group = self.group(id).await?;
        report(&**self.driver(), &group).await
    }

    /// The batch `id`; on a client scoped to a tenant, only a batch whose callback it sees.
    async fn group(&self, id: GroupId) -> Result<GroupRecord, JobError> {
        let missing = || JobError::new(ErrorCode::JobNotFound, format!("no batch with id {id}"));
        let group = self
            .driver()
            .job_group_get(id)
            .await?
            .filter(|g| g.parent.is_none())
            .ok_or_else(missing)?;
        if self.job(group.waiter).await?.is_none() {
            return Err(missing());
        }
        Ok(group)
    }
}

impl Batch {
    /// The batch's id.
    pub fn id(&self) -> GroupId {
        self.id
    }

    /// Its callback job's id.
    pub fn callback(&self) -> JobId {
        self.callback
    }

    /// Enqueues one job `J` per input as members (at most [`MAX_GROUP_JOIN`] a call). A member
    /// whose key a live job holds joins as that job. Refused with `X_INVARIANT` once the batch
    /// is closed. The enqueue and the join are two writes: a call that failed between them is
    /// retried with the same inputs, which dedupe by key and join.
    pub async fn add<J, I>(&self, inputs: I) -> Result<Vec<Enqueued>, JobError>
    where
        J: Job,
        I: IntoIterator<Item = J::Input>,
    {
        let inputs: Vec<J::Input> = inputs.into_iter().collect();
        if inputs.len() > MAX_GROUP_JOIN {
            return Err(JobError::new(
                ErrorCode::LimitExceeded,
                format!(
                    "one add to a batch names {} jobs, over the limit of {MAX_GROUP_JOIN} (jobs::driver::MAX_GROUP_JOIN)",
                    inputs.len()
                ),
            )
            .with_fix("add them in several calls"));
        }
        self.refuse_if_closed().await?;
        let enqueued = self.jobs.enqueue_many::<J, _>(inputs).await?;
        let members: Vec<JobId> = enqueued.iter().map(|e| e.id).collect();
        self.join(&members, GroupNeed::Keep).await?;
        Ok(enqueued)
    }

    /// Closes the batch: no more members; the callback becomes due once every member has
    /// settled (at once, if they all have). Closing twice is harmless.
    pub async fn close(&self) -> Result<BatchReport, JobError> {
        let group = self.join(&[], GroupNeed::All).await?;
        report(&**self.jobs.driver(), &group).await
    }

    /// How the batch stands now.
    pub async fn report(&self) -> Result<BatchReport, JobError> {
        self.jobs.batch_report(self.id).await
    }

    /// Whether the live job holding the callback's key is this batch's callback: its batch
    /// exists, or an earlier open enqueued it (due at [`blocked_until`]) and failed before
    /// writing the batch.
    async fn is_its_callback(&self) -> Result<bool, JobError> {
        if self.jobs.driver().job_group_get(self.id).await?.is_some() {
            return Ok(true);
        }
        let row = self.jobs.job(self.callback).await?;
        Ok(row.is_some_and(|r| r.run_at == blocked_until()))
    }

    async fn refuse_if_closed(&self) -> Result<(), JobError> {
        let group = self.jobs.group(self.id).await?;
        if group.need.is_some() {
            return Err(JobError::new(
                ErrorCode::Invariant,
                format!("batch {} is closed; nothing was enqueued", self.id),
            )
            .with_fix("open a new batch for more jobs"));
        }
        Ok(())
    }

    async fn join(&self, members: &[JobId], need: GroupNeed) -> Result<GroupRecord, JobError> {
        self.jobs
            .driver()
            .job_group_join(&GroupJoinParams {
                group: self.id,
                waiter: self.callback,
                parent: None,
                members,
                need,
                now: self.jobs.now(),
            })
            .await
    }
}

/// The id of the batch whose callback is `callback`.
fn batch_id(callback: JobId) -> GroupId {
    uuid::Uuid::new_v5(&callback, b"batch")
}

/// Reads every member back into the counts.
async fn report(driver: &dyn JobDriver, group: &GroupRecord) -> Result<BatchReport, JobError> {
    let mut report = BatchReport {
        id: group.id,
        callback: group.waiter,
        closed: group.need.is_some(),
        size: group.size,
        settled: group.settled,
        done: 0,
        failed: Vec::new(),
        cancelled: Vec::new(),
        states: BTreeMap::new(),
    };
    for member in every_member(driver, group.id).await? {
        let state = member.state.map_or("gone", |s| s.as_str());
        *report.states.entry(state.to_string()).or_default() += 1;
        match member.state {
            Some(JobState::Done) => report.done += 1,
            Some(JobState::Cancelled) => report.cancelled.push(member.id),
            Some(JobState::Failed | JobState::Dead) | None => report.failed.push(member.id),
            Some(_) => {}
        }
    }
    Ok(report)
}

impl Run {
    /// The batch this job is the callback of (or a member of), as it stands now: `None` when
    /// it belongs to none. A callback reads its batch's counts and failed members here.
    pub async fn batch(&self) -> Result<Option<BatchReport>, JobError> {
        let links = self.driver().job_links(self.job_id()).await?;
        let Some(id) = links.batch else {
            return Ok(None);
        };
        let Some(group) = self.driver().job_group_get(id).await? else {
            return Ok(None);
        };
        report(&**self.driver(), &group).await.map(Some)
    }
}
