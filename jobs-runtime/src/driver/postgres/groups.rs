//! Groups of jobs awaited together on Postgres (`records/group.rs`; migration 0031): the join,
//! the reads, the wake a parent asks for after it parks, the fold of members' settles that the
//! release pass runs, and the cancel of a parent's children.
//!
//! Counting rides on the dependencies' machinery (`dependencies.rs`). The join marks each member
//! `has_dependents` under its row lock (`group_join_mark.sql`), so from then on a member's
//! settle, whichever path ends it (an ack, a nack to dead or failed, a cancel, a dependency's
//! cancel, a burial, a removal), notes it in `x_job_releases` in the settle's own transaction;
//! a member that ended before is seen ended by the join and counted there. The release pass
//! that follows such a settle (and the once-a-minute sweep, for what a dead process left) folds
//! what it took into the groups (`group_fold.sql`): each member row is marked settled once, so
//! a member is counted once however often it ends. A settle never writes the group's row:
//! 10,000 children settling at once update it once per pass, in a short statement at the end
//! of the pass's transaction.
//!
//! Costs: a join is one transaction of four statements (mark, open, join; a fifth wakes the
//! waiter when the join completes the group; a member held by a settle in flight costs a round
//! more). A member's settle costs nothing more than the release pass it triggers: one fold
//! statement in the pass's transaction, and one more when the fold completes a group. The wake
//! a parent asks for is one statement.
//!
//! The wake is atomic with the counting: the fold and `group_wake.sql` both lock the group's
//! row, and each reads the waiter in a statement that starts after that lock is granted, so
//! either the fold sees the parent parked and wakes it, or the parent's wake sees the group done.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use sqlx::postgres::{PgConnection, PgRow};
use sqlx::Row;

use super::classify::{classify, Op};
use super::{floors, PostgresDriver};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

/// Rounds a join marks its members skipping the ones a transaction holds (a settle in flight)
/// before it waits for them.
const MARK_ROUNDS: usize = 8;

/// The pause between two of those rounds: about a settle's length.
const MARK_PAUSE: Duration = Duration::from_millis(2);

/// A job made due by a group's completion, as the claim floors need it.
struct Woken {
    id: JobId,
    queue: String,
    tenant: Option<String>,
    priority: i16,
}

impl PostgresDriver {
    /// [`JobDriver::job_group_join`](crate::driver::JobDriver::job_group_join), in one
    /// transaction: mark the members (their settles are noted from here on) and read how each
    /// stands, lock the group (creating it), append the new members and count the ended ones,
    /// and wake the waiter if this join completed the group.
    pub(super) async fn group_join(
        &self,
        params: &GroupJoinParams<'_>,
    ) -> Result<GroupRecord, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let members = distinct(params.members);
        let mut tx = self.pool.begin().await.map_err(failed)?;
        let states = self.mark_members(&mut tx, &members).await?;
        let ended: Vec<bool> = members
            .iter()
            .map(|id| {
                !states
                    .get(id)
                    .copied()
                    .flatten()
                    .is_some_and(JobState::is_live)
            })
            .collect();
        let opened = sqlx::query(self.sql.group_open.clone())
            .bind(params.group)
            .bind(params.waiter)
            .bind(params.parent)
            .bind(params.now)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed)?;
        let before = group_record(&opened, Op::JobEnqueue)?;
        let (kind, count) = match params.need {
            GroupNeed::Keep => ("keep", None),
            GroupNeed::Count(n) => ("count", Some(i32::try_from(n).unwrap_or(i32::MAX))),
            GroupNeed::All => ("all", None),
        };
        let joined = sqlx::query(self.sql.group_join.clone())
            .bind(params.group)
            .bind(&members)
            .bind(i32::try_from(before.size).unwrap_or(i32::MAX))
            .bind(&ended)
            .bind(kind)
            .bind(count)
            .bind(params.now)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed)?;
        let after = group_record(&joined, Op::JobEnqueue)?;
        let woken = if before.done_at.is_none() && after.done_at.is_some() {
            self.wake_waiters(&mut tx, &[after.waiter], params.now, Op::JobEnqueue)
                .await?
        } else {
            Vec::new()
        };
        tx.commit().await.map_err(failed)?;
        self.lower_floors(&woken, params.now);
        Ok(after)
    }

    /// Marks the members `has_dependents` and answers each one's state as of its lock (`None`:
    /// the row is gone). Members a settle in flight holds are skipped and asked again after a
    /// pause, then waited for: the join never waits on one member while holding another in
    /// its first rounds (`group_join_mark.sql` says why).
    async fn mark_members(
        &self,
        tx: &mut PgConnection,
        members: &[JobId],
    ) -> Result<HashMap<JobId, Option<JobState>>, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let mut states: HashMap<JobId, Option<JobState>> = HashMap::with_capacity(members.len());
        let mut remaining = members.to_vec();
        // The waiting rounds after MARK_ROUNDS: one takes every lock; a member removed under it
        // is found gone by the next.
        for round in 0..MARK_ROUNDS + 2 {
            let statement = if round < MARK_ROUNDS {
                self.sql.group_join_mark.clone()
            } else {
                self.sql.group_join_mark_wait.clone()
            };
            let marked: Vec<(JobId, JobState)> = sqlx::query_as(statement)
                .bind(&remaining)
                .fetch_all(&mut *tx)
                .await
                .map_err(failed)?;
            for (id, state) in marked {
                states.insert(id, Some(state));
            }
            remaining.retain(|id| !states.contains_key(id));
            if remaining.is_empty() {
                return Ok(states);
            }
            let present: HashSet<JobId> = sqlx::query_scalar(self.sql.group_join_present.clone())
                .bind(&remaining)
                .fetch_all(&mut *tx)
                .await
                .map_err(failed)?
                .into_iter()
                .collect();
            remaining.retain(|id| {
                let gone = !present.contains(id);
                if gone {
                    states.insert(*id, None);
                }
                !gone
            });
            if remaining.is_empty() {
                return Ok(states);
            }
            if round < MARK_ROUNDS {
                tokio::time::sleep(MARK_PAUSE).await;
            }
        }
        Err(JobError::new(
            ErrorCode::Driver,
            format!(
                "postgres `{}` failed: {} members of a group join could not be marked; nothing was joined",
                Op::JobEnqueue.name(),
                remaining.len()
            ),
        ))
    }

    /// [`JobDriver::job_group_get`](crate::driver::JobDriver::job_group_get).
    pub(super) async fn group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        let row = sqlx::query(self.sql.group_get.clone())
            .bind(group)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::JobGet, e))?;
        row.map(|row| group_record(&row, Op::JobGet)).transpose()
    }

    /// [`JobDriver::job_group_members`](crate::driver::JobDriver::job_group_members): one range
    /// of the members' primary key, each joined to its job.
    pub(super) async fn group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        let failed = |e| classify(Op::JobGet, e);
        let after = params
            .after
            .map_or(-1, |p| i32::try_from(p).unwrap_or(i32::MAX));
        let rows = sqlx::query(self.sql.group_members.clone())
            .bind(params.group)
            .bind(after)
            .bind(i64::from(params.limit.min(GROUP_PAGE)))
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        rows.iter()
            .map(|row| {
                let position: i32 = row.try_get("position").map_err(failed)?;
                let result: Option<sqlx::types::Json<serde_json::Value>> =
                    row.try_get("result").map_err(failed)?;
                Ok(GroupMember {
                    position: u32::try_from(position).unwrap_or(0),
                    id: row.try_get("job_id").map_err(failed)?,
                    state: row.try_get("state").map_err(failed)?,
                    result: result.map(|json| json.0),
                    last_error: row.try_get("last_error").map_err(failed)?,
                    last_error_code: row.try_get("last_error_code").map_err(failed)?,
                })
            })
            .collect()
    }

    /// [`JobDriver::job_group_wake`](crate::driver::JobDriver::job_group_wake): one statement,
    /// under the group's row lock (`group_wake.sql`).
    pub(super) async fn group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        let failed = |e| classify(Op::JobRelease, e);
        let row = sqlx::query(self.sql.group_wake.clone())
            .bind(params.group)
            .bind(params.now)
            .bind(&*self.wake_channel)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let group = group_record(&row, Op::JobRelease)?;
        let woken: Option<JobId> = row.try_get("woken").map_err(failed)?;
        if let Some(id) = woken {
            let woken = Woken {
                id,
                queue: row.try_get("queue").map_err(failed)?,
                tenant: row.try_get("tenant_id").map_err(failed)?,
                priority: row.try_get("priority").map_err(failed)?,
            };
            self.lower_floors(&[woken], params.now);
        }
        Ok(Some(group))
    }

    /// The release pass's part for groups, in its transaction: counts the settled jobs `taken`
    /// in the groups still counting them, and wakes the waiters of the groups that completes.
    pub(super) async fn fold_groups(
        &self,
        tx: &mut PgConnection,
        taken: &[JobId],
        now: Timestamp,
    ) -> Result<(), JobError> {
        let failed = |e| classify(Op::JobRelease, e);
        let folded: Vec<(GroupId, JobId, bool)> = sqlx::query_as(self.sql.group_fold.clone())
            .bind(taken)
            .bind(now)
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        let waiters: Vec<JobId> = folded
            .into_iter()
            .filter(|(_, _, done_now)| *done_now)
            .map(|(_, waiter, _)| waiter)
            .collect();
        if waiters.is_empty() {
            return Ok(());
        }
        let woken = self.wake_waiters(tx, &waiters, now, Op::JobRelease).await?;
        // Due now: this driver's claims seek from below them (the pass commits right after).
        self.lower_floors(&woken, now);
        Ok(())
    }

    /// Makes the `suspended` ones of `waiters` ready, due at `now`, and announces their queues
    /// (`group_wake_waiters.sql`).
    async fn wake_waiters(
        &self,
        tx: &mut PgConnection,
        waiters: &[JobId],
        now: Timestamp,
        operation: Op,
    ) -> Result<Vec<Woken>, JobError> {
        let failed = |e| classify(operation, e);
        let rows = sqlx::query(self.sql.group_wake_waiters.clone())
            .bind(waiters)
            .bind(now)
            .bind(&*self.wake_channel)
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        rows.iter()
            .map(|row| {
                Ok(Woken {
                    id: row.try_get("id").map_err(failed)?,
                    queue: row.try_get("queue").map_err(failed)?,
                    tenant: row.try_get("tenant_id").map_err(failed)?,
                    priority: row.try_get("priority").map_err(failed)?,
                })
            })
            .collect()
    }

    /// The cancel's cascade, in its transaction: the live children of `id`, and theirs, are
    /// cancelled at `now`, each with its history row by `actor` (`job_cancel_children.sql`).
    pub(super) async fn cancel_children(
        &self,
        tx: &mut PgConnection,
        id: JobId,
        now: Timestamp,
        actor: Option<&str>,
    ) -> Result<(), JobError> {
        sqlx::query(self.sql.job_cancel_children.clone())
            .bind(id)
            .bind(now)
            .bind(actor)
            .execute(&mut *tx)
            .await
            .map_err(|e| classify(Op::JobCancel, e))?;
        Ok(())
    }

    fn lower_floors(&self, woken: &[Woken], now: Timestamp) {
        self.floors.lower_all(woken.iter().map(|w| {
            (
                w.queue.as_str(),
                w.tenant.as_deref(),
                floors::Position::of(w.priority, now, w.id),
            )
        }));
    }
}

/// The members in order, each once (a join names each member once; a repeat is dropped).
fn distinct(members: &[JobId]) -> Vec<JobId> {
    let mut seen = HashSet::with_capacity(members.len());
    members
        .iter()
        .copied()
        .filter(|id| seen.insert(*id))
        .collect()
}

/// A group row (`id, waiter, parent_id, size, settled, need, done_at, created_at`).
fn group_record(row: &PgRow, operation: Op) -> Result<GroupRecord, JobError> {
    let failed = |e| classify(operation, e);
    let count = |column: &'static str| -> Result<u32, JobError> {
        let stored: i32 = row.try_get(column).map_err(failed)?;
        Ok(u32::try_from(stored).unwrap_or(0))
    };
    let need: Option<i32> = row.try_get("need").map_err(failed)?;
    Ok(GroupRecord {
        id: row.try_get("id").map_err(failed)?,
        waiter: row.try_get("waiter").map_err(failed)?,
        parent: row.try_get("parent_id").map_err(failed)?,
        size: count("size")?,
        settled: count("settled")?,
        need: need.map(|n| u32::try_from(n).unwrap_or(0)),
        done_at: row.try_get("done_at").map_err(failed)?,
        created_at: row.try_get("created_at").map_err(failed)?,
    })
}
