//! Groups of jobs awaited together on Postgres (`records/group.rs`; migration 0031): the join,
//! the reads, the wake a parent asks for after it parks, the fold of members' settles that the
//! release pass runs, and the cancel of a parent's children.
//!
//! Counting rides on the dependencies' machinery (`dependencies.rs`; migration 0031 says it
//! whole). The join first marks each member `has_dependents`, each mark committed on its own
//! (`group_join_mark.sql`), so from then on a member's settle, whichever path ends it (an ack,
//! a nack to dead or failed, a cancel, a dependency's cancel, a burial, a removal), notes it in
//! `x_job_releases` in the settle's own transaction. The join then files the members and notes
//! the group itself, in one short transaction, and runs the release pass: its fold
//! (`group_fold.sql`) counts each noted member that ended in its groups, and checks the members
//! a noted group's joins filed, counting the ones that ended before they were marked or while
//! the join ran. Each member row's `settled` flag makes every count happen once. A note a dead
//! process left (a settle's or a join's) is folded by the next pass, the once-a-minute sweep at
//! the latest. A settle never writes the group's row: 10,000 children settling at once update
//! it once per pass, in a short statement at the end of the pass's transaction.
//!
//! Locks: the join never holds a member's lock while it waits for another (a batched ack
//! holding two siblings in another order would deadlock with it): its marks skip the members a
//! settle in flight holds, commit, and ask again, then wait for each left alone. The join's
//! transaction holds only the group's row, and waits on nothing but it; every fold locks member
//! rows in (group, position) order, then groups in id order, then the waiters.
//!
//! Costs: a join marks its members in one statement (a member held by a settle in flight costs
//! a round more: a 2 ms pause, a check of which are left, a mark), files them in a transaction
//! of three statements (note, open, file), then runs the release pass (its fold counts the ones
//! already ended) and reads the group back. A member's settle is its own statement, unchanged
//! (the trigger adds the note); membership makes it run the release pass after it, as a
//! dependency does, where the groups add one fold statement per round, and one more when the
//! fold completes a group. The wake a parent asks for is one statement.
//!
//! The wake is atomic with the counting: the fold and `group_wake.sql` both lock the group's
//! row, so they take turns. The fold reads the waiter in a statement of its own, begun once it
//! holds the lock, so it sees a park that committed before; the wake's one statement begins
//! after the park committed and reads the group as the fold left it. Either the fold sees the
//! parent parked and wakes it, or the parent's wake sees the group done.

use std::collections::HashSet;
use std::time::Duration;

use sqlx::postgres::{PgConnection, PgRow};
use sqlx::FromRow;
use sqlx::Row;

use super::classify::{classify, Op};
use super::{floors, PostgresDriver};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// Rounds a join marks its members skipping the ones a transaction holds (a settle in flight)
/// before it waits for each alone.
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
    /// [`JobDriver::job_group_join`](crate::driver::JobDriver::job_group_join): mark the
    /// members (their settles are noted from here on), then in one transaction note the group,
    /// lock it (creating it) and file the new members after its last, then run the release pass,
    /// which counts the members that ended, marks the group done and wakes its waiter. Answers
    /// the group as the pass left it (a pass another process runs at that moment may count some
    /// members a moment later: the parent's wake after its park then finds the group done).
    pub(super) async fn group_join(
        &self,
        params: &GroupJoinParams<'_>,
    ) -> Result<GroupRecord, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let members = distinct(params.members);
        self.mark_members(&members).await?;
        let mut tx = super::pooled::begin(&self.pool).await.map_err(failed)?;
        sqlx::query(self.sql.group_note.clone())
            .bind(params.group)
            .bind(params.now)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
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
            .bind(kind)
            .bind(count)
            .fetch_one(&mut *tx)
            .await
            .map_err(failed)?;
        let filed = group_record(&joined, Op::JobEnqueue)?;
        tx.commit().await.map_err(failed)?;
        self.release_after(params.now).await;
        Ok(self.group_get(params.group).await?.unwrap_or(filed))
    }

    /// Marks the members `has_dependents`, each mark committed before the join files them.
    /// Members a settle in flight holds are skipped and asked for again after a pause, then
    /// waited for one at a time: no statement here waits on a member while holding another.
    async fn mark_members(&self, members: &[JobId]) -> Result<(), JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let mut left = members.to_vec();
        for round in 0..MARK_ROUNDS {
            if round > 0 {
                tokio::time::sleep(MARK_PAUSE).await;
            }
            let marked: HashSet<JobId> = sqlx::query_scalar(self.sql.group_join_mark.clone())
                .bind(&left)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?
                .into_iter()
                .collect();
            if marked.len() == left.len() {
                return Ok(());
            }
            // Already marked, gone, or held: ask which still need it.
            left = sqlx::query_scalar(self.sql.group_join_unmarked.clone())
                .bind(&left)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
            if left.is_empty() {
                return Ok(());
            }
        }
        for id in left {
            sqlx::query(self.sql.group_join_mark_one.clone())
                .bind(id)
                .execute(&self.pool)
                .await
                .map_err(failed)?;
        }
        Ok(())
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
        sqlx::query_as(self.sql.group_members.clone())
            .bind(params.group)
            .bind(after)
            .bind(i64::from(params.limit.min(GROUP_PAGE)))
            .fetch_all(&self.pool)
            .await
            .map_err(failed)
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

    /// The release pass's part for groups, in its transaction (`group_fold.sql`): counts the
    /// settled jobs among `taken` in the groups still counting them, checks the members filed
    /// by the joins of the groups among `taken`, and wakes the waiters of the groups this
    /// completes.
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
        let woken = self.wake_waiters(tx, &waiters, now).await?;
        // Lowered before the pass commits: a floor is a lower bound, never a reservation.
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
    ) -> Result<Vec<Woken>, JobError> {
        let failed = |e| classify(Op::JobRelease, e);
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

    /// Woken jobs are due now: this driver's claims seek from below them.
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
    GroupRecord::from_row(row).map_err(|e| classify(operation, e))
}
