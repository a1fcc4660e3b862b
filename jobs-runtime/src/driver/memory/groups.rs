//! Groups of jobs awaited together (`records/group.rs`): the children a parent invoked and a
//! batch's members, counted as they stop being live, all under the driver's one lock.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::state::MemoryState;
use crate::clock::Timestamp;
use crate::driver::records::*;

/// The groups, and the links between jobs they make.
#[derive(Debug, Default)]
pub(super) struct Groups {
    groups: HashMap<GroupId, StoredGroup>,
    /// A live member -> the groups still to count it.
    watching: HashMap<JobId, Vec<GroupId>>,
    /// A child -> the job that invoked it.
    parents: HashMap<JobId, JobId>,
    /// A parent -> the jobs it invoked, in order.
    children: HashMap<JobId, Vec<JobId>>,
    /// A batch member or callback -> its batch.
    batches: HashMap<JobId, GroupId>,
    /// A waiter -> the groups it waits on.
    waiters: HashMap<JobId, Vec<GroupId>>,
}

#[derive(Debug)]
struct StoredGroup {
    record: GroupRecord,
    members: Vec<JobId>,
    joined: HashSet<JobId>,
    /// Its waiter is gone: it goes once its last member is counted.
    orphaned: bool,
}

impl Groups {
    /// Whether some group still counts `id` (the common answer, no, costs one lookup).
    pub(super) fn watches(&self, id: JobId) -> bool {
        !self.watching.is_empty() && self.watching.contains_key(&id)
    }

    /// The live children of `id`, for a cancel to follow.
    pub(super) fn children_of(&self, id: JobId) -> Vec<JobId> {
        self.children.get(&id).cloned().unwrap_or_default()
    }

    pub(super) fn get(&self, group: GroupId) -> Option<GroupRecord> {
        self.groups.get(&group).map(|g| g.record.clone())
    }

    /// Forgets a removed job's own links (retention, `jobs rm`); its place among its parent's
    /// children and in its groups stays, read back as gone. The groups it waited on go once
    /// every member is counted (at once, or at the last member's settle).
    pub(super) fn forget(&mut self, id: JobId) {
        self.watching.remove(&id);
        self.batches.remove(&id);
        self.children.remove(&id);
        self.parents.remove(&id);
        for group in self.waiters.remove(&id).unwrap_or_default() {
            let counted = self
                .groups
                .get(&group)
                .is_some_and(|g| g.record.settled >= g.record.size);
            match self.groups.get_mut(&group) {
                Some(_) if counted => self.drop_group(group),
                Some(g) => g.orphaned = true,
                None => {}
            }
        }
    }

    /// Drops a group whose waiter is gone and whose members are all counted.
    fn drop_group(&mut self, group: GroupId) {
        let Some(gone) = self.groups.remove(&group) else {
            return;
        };
        for member in gone.members {
            if self.batches.get(&member) == Some(&group) {
                self.batches.remove(&member);
            }
        }
    }
}

impl MemoryState {
    /// [`JobDriver::job_group_join`](crate::driver::JobDriver::job_group_join).
    pub(super) fn group_join(&mut self, params: &GroupJoinParams<'_>) -> GroupRecord {
        let now = params.now;
        let stored = self
            .groups
            .groups
            .entry(params.group)
            .or_insert_with(|| StoredGroup {
                record: GroupRecord {
                    id: params.group,
                    waiter: params.waiter,
                    parent: params.parent,
                    size: 0,
                    settled: 0,
                    need: None,
                    done_at: None,
                    created_at: now,
                },
                members: Vec::new(),
                joined: HashSet::default(),
                orphaned: false,
            });
        let (parent, group, waiter) =
            (stored.record.parent, stored.record.id, stored.record.waiter);
        let mut joined = Vec::new();
        for member in params.members {
            if stored.joined.insert(*member) {
                stored.members.push(*member);
                stored.record.size += 1;
                joined.push(*member);
            }
        }
        stored.record.need =
            GroupRecord::need_after(stored.record.need, params.need, stored.record.size);
        let waits = self.groups.waiters.entry(waiter).or_default();
        if !waits.contains(&group) {
            waits.push(group);
        }
        if parent.is_none() {
            self.groups.batches.insert(waiter, group);
        }
        for member in joined {
            match parent {
                Some(parent) => {
                    // A job names one parent, the first to invoke it; an invoke whose key met
                    // a live job awaits that job, which is listed among its children too (as
                    // the other stores list it).
                    let children = self.groups.children.entry(parent).or_default();
                    let unlisted = match self.groups.parents.entry(member) {
                        std::collections::hash_map::Entry::Vacant(slot) => {
                            slot.insert(parent);
                            true
                        }
                        std::collections::hash_map::Entry::Occupied(first) => {
                            *first.get() != parent && !children.contains(&member)
                        }
                    };
                    if unlisted {
                        children.push(member);
                    }
                }
                None => {
                    self.groups.batches.insert(member, group);
                }
            }
            let live = self
                .jobs
                .get(&member)
                .is_some_and(|j| j.record.state.is_live());
            if live {
                self.groups.watching.entry(member).or_default().push(group);
            } else if let Some(g) = self.groups.groups.get_mut(&group) {
                g.record.settled += 1;
            }
        }
        self.group_check(group, now);
        self.groups.get(group).expect("the group was just filed")
    }

    /// A member `id` stopped being live (or was removed) at `now`: each group still counting
    /// it counts it, and a group it completes makes its waiter due.
    pub(super) fn settle_groups(&mut self, id: JobId, now: Timestamp) {
        let Some(groups) = self.groups.watching.remove(&id) else {
            return;
        };
        for group in groups {
            let Some(g) = self.groups.groups.get_mut(&group) else {
                continue;
            };
            g.record.settled += 1;
            if g.orphaned && g.record.settled >= g.record.size {
                self.groups.drop_group(group);
                continue;
            }
            self.group_check(group, now);
        }
    }

    /// Marks the group done once enough members settled, and makes its waiter due.
    fn group_check(&mut self, group: GroupId, now: Timestamp) {
        let Some(g) = self.groups.groups.get_mut(&group) else {
            return;
        };
        let early = g.record.need.is_some()
            && (planted!(GroupWakesEarly)
                || (planted!(BatchCallbackEarly) && g.record.parent.is_none()));
        if g.record.done_at.is_some() || !(g.record.is_done() || early) {
            return;
        }
        g.record.done_at = Some(now);
        let waiter = g.record.waiter;
        self.group_wake_waiter(waiter, now);
    }

    /// Makes a waiting waiter (a parked parent, a batch's callback) `ready`, due at `now`.
    fn group_wake_waiter(&mut self, waiter: JobId, now: Timestamp) {
        let Some(job) = self.jobs.get(&waiter) else {
            return;
        };
        if !matches!(job.record.state, JobState::Suspended | JobState::Delayed) {
            return;
        }
        self.released.push(job.queue.to_string());
        self.set_state(waiter, |r| {
            r.state = JobState::Ready;
            r.run_at = now;
            r.updated_at = now;
        });
    }

    /// [`JobDriver::job_group_wake`](crate::driver::JobDriver::job_group_wake).
    pub(super) fn group_wake(&mut self, params: &GroupWakeParams) -> Option<GroupRecord> {
        let record = self.groups.get(params.group)?;
        if record.done_at.is_some() {
            self.group_wake_waiter(record.waiter, params.now);
        }
        Some(record)
    }

    /// [`JobDriver::job_group_members`](crate::driver::JobDriver::job_group_members).
    pub(super) fn group_members(&self, params: &GroupMembersParams) -> Vec<GroupMember> {
        let Some(g) = self.groups.groups.get(&params.group) else {
            return Vec::new();
        };
        let from = params.after.map_or(0, |p| p as usize + 1);
        g.members
            .iter()
            .enumerate()
            .skip(from)
            .take(params.limit.min(GROUP_PAGE) as usize)
            .map(|(position, id)| {
                let row = self.jobs.get(id).map(|j| &j.record);
                GroupMember {
                    position: position as u32,
                    id: *id,
                    state: row.map(|r| r.state),
                    result: row.and_then(|r| r.result.clone()),
                    last_error: row.and_then(|r| r.last_error.clone()),
                    last_error_code: row.and_then(|r| r.last_error_code.clone()),
                }
            })
            .collect()
    }

    /// The group links of `id` for [`JobLinks`]: its parent, its children, its batch.
    pub(super) fn group_links(&self, id: JobId, links: &mut JobLinks) {
        links.parent = self.groups.parents.get(&id).copied();
        links.children = self
            .groups
            .children
            .get(&id)
            .map(|list| {
                list.iter()
                    .take(MAX_DEPENDENCIES)
                    .map(|c| (*c, self.jobs.get(c).map(|j| j.record.state)))
                    .collect()
            })
            .unwrap_or_default();
        links.batch = self.groups.batches.get(&id).copied();
    }
}
