//! Groups of jobs awaited together: the children a parent invokes in one step
//! ([`Run::invoke`](crate::Run::invoke), [`Run::invoke_all`](crate::Run::invoke_all)) and the
//! members of a batch. A group names one job, its *waiter*, that is made due when `need` of its
//! members have settled: the parked parent, or the batch's blocked callback.
//!
//! Every driver keeps a group the same way: members in the order they joined, each counted once
//! when it stops being live (or at its join, when it already had); `settled` reaching `need`
//! marks the group done and makes the waiter due if it is waiting: `suspended` (a parked
//! parent) or `delayed` (a batch's callback, enqueued due at
//! [`blocked_until`](super::blocked_until)). A parent still running
//! is made due by its own park: [`JobDriver::job_group_wake`](crate::driver::JobDriver::job_group_wake)).
//! So a parent with 10,000 children is woken once, by a counter, and reads its children back
//! in pages of [`GROUP_PAGE`].

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{JobId, JobState};
use crate::clock::Timestamp;

/// A group's id: derived from the invoking run and its step name, or a batch's own.
pub type GroupId = Uuid;

/// The most members one page of [`GroupMembersParams`] reads.
pub const GROUP_PAGE: u32 = 1_000;

/// The most children one invoke may start, and the most members one batch call may add.
pub const MAX_GROUP_JOIN: usize = 10_000;

/// How many members must settle before a group's waiter is made due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupNeed {
    /// As it is: open (a batch still being added to), or as an earlier join set it.
    Keep,
    /// This many: an invoke awaiting all its children, or the first N.
    Count(u32),
    /// Every member the group holds once this join's members are in: it closes (a batch).
    All,
}

/// Adds members to a group, creating it on its first join. Idempotent: a member already in
/// the group is not added again, and a replayed join changes nothing.
#[derive(Debug, Clone)]
pub struct GroupJoinParams<'a> {
    /// The group.
    pub group: GroupId,
    /// The job made due once `need` members have settled (set by the first join).
    pub waiter: JobId,
    /// The invoking parent, recorded as each member's parent (`None`: a batch).
    pub parent: Option<JobId>,
    /// The members, appended in this order (ids of jobs that exist).
    pub members: &'a [JobId],
    /// The need after this join.
    pub need: GroupNeed,
    /// Now.
    pub now: Timestamp,
}

/// A group as a store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRecord {
    /// Its id.
    pub id: GroupId,
    /// The job made due when it is done.
    pub waiter: JobId,
    /// The invoking parent (`None`: a batch).
    pub parent: Option<JobId>,
    /// Members joined.
    pub size: u32,
    /// Members that stopped being live (each counted once).
    pub settled: u32,
    /// Members that must settle before it is done; `None` while it is open.
    pub need: Option<u32>,
    /// When `settled` first reached `need`.
    pub done_at: Option<Timestamp>,
    /// When its first member joined.
    pub created_at: Timestamp,
}

impl GroupRecord {
    /// Whether enough members have settled.
    pub fn is_done(&self) -> bool {
        self.need.is_some_and(|need| self.settled >= need)
    }

    /// The need a join leaves, given the group's size after it.
    pub fn need_after(before: Option<u32>, need: GroupNeed, size: u32) -> Option<u32> {
        match need {
            GroupNeed::Keep => before,
            GroupNeed::Count(n) => Some(n),
            GroupNeed::All => Some(size),
        }
    }
}

/// One member as its group reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupMember {
    /// Its place in the group, from 0.
    pub position: u32,
    /// The job.
    pub id: JobId,
    /// Its state (`None`: retention removed the row).
    pub state: Option<JobState>,
    /// Its kept result, once `done`.
    pub result: Option<serde_json::Value>,
    /// Its last failure, summarised.
    pub last_error: Option<String>,
    /// Its last failure's code.
    pub last_error_code: Option<String>,
}

/// A page of a group's members, in join order.
#[derive(Debug, Clone)]
pub struct GroupMembersParams {
    /// The group.
    pub group: GroupId,
    /// Members after this position (`None`: from the first).
    pub after: Option<u32>,
    /// At most this many ([`GROUP_PAGE`] at most).
    pub limit: u32,
}

/// Makes a done group's waiter due, if it is parked; asked by a parent right after it parks.
#[derive(Debug, Clone)]
pub struct GroupWakeParams {
    /// The group.
    pub group: GroupId,
    /// Now: the waiter's new run time.
    pub now: Timestamp,
}

/// Every member of `group` in join order, read a page of [`GROUP_PAGE`] at a time: what a
/// resuming parent and a batch's report read.
pub async fn every_member(
    driver: &dyn crate::driver::JobDriver,
    group: GroupId,
) -> Result<Vec<GroupMember>, crate::error::JobError> {
    let mut members = Vec::new();
    let mut after = None;
    loop {
        let page = driver
            .job_group_members(&GroupMembersParams {
                group,
                after,
                limit: GROUP_PAGE,
            })
            .await?;
        let full = page.len() as u32 == GROUP_PAGE;
        after = page.last().map(|last| last.position);
        members.extend(page);
        if !full {
            return Ok(members);
        }
    }
}
