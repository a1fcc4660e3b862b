//! Groups of jobs awaited together on SQLite (`records/group.rs`; migration 0014): the join, the
//! reads, the wake a parent asks for after it parks, the count of removed members the release
//! pass makes, and the cancel of a parent's children.
//!
//! SQLite runs one writer at a time, so a member is counted inline: the join marks each live
//! member `in_group`, and the `x_jobs_count_group_member` trigger counts it in the transaction
//! of whatever statement ends it (an ack, a batch of acks, a nack, a cancel, a dependency's
//! cancel, a burial), marks a group it completes done and makes the waiter due; nothing is left
//! for later, so a crash loses no count. A removal gives the trigger no time, so a removed live
//! member is noted for the release pass that follows every removal, which counts it here
//! ([`count_removed`]). Each member row's `settled` flag makes every count happen once.
//!
//! The counting is atomic with the parent's wake after its park: a member's settle and its
//! count are one write, so the group the wake reads either is done already (the wake makes the
//! parked parent due) or is completed by a later settle, whose trigger finds the parent parked
//! (the park was written before the wake was asked) and makes it due itself.
//!
//! Costs: a join is one transaction of five statements (open the group, read how the members
//! stand, file the new ones, mark the live ones, write the group's counts), two more when it
//! completes the group (wake the waiter, hint it); a member's settle runs the trigger's five
//! statements inside its own, each an index probe; the wake is a read, and for a done group
//! the same two in a write transaction.

use std::collections::HashSet;

use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteRow};
use sqlx::FromRow;
use sqlx::{Connection, Row};

use super::classify::{classify, Op};
use super::dependencies::hex_ids;
use super::time::ts;
use super::writer::Writer;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// A group's columns, in [`group_record`]'s order.
macro_rules! group_columns {
    () => {
        "id, waiter, parent_id, size, settled, need, done_at, created_at"
    };
}

/// Creates group ?1 (waiter ?2, parent ?3, at ?4) on its first join; answers it.
const OPEN: &str = concat!(
    "insert into x_job_groups (id, waiter, parent_id, created_at) values (?1, ?2, ?3, ?4)
     on conflict (id) do update set waiter = x_job_groups.waiter
     returning ",
    group_columns!()
);

/// How each member named (?2, a JSON array of hex ids) stands: its state (null: the row is
/// gone) and whether it is in group ?1 already.
const STANDING: &str = "select unhex(f.value) as id, x.state,
        exists (
            select 1 from x_job_group_members e
            where e.job_id = unhex(f.value) and e.group_id = ?1
        ) as joined
    from json_each(?2) f
    left join x_jobs x on x.id = unhex(f.value)
    order by f.key";

/// Files the new members of group ?1: a JSON array of `[id hex, position, settled]`.
const FILE: &str = "insert into x_job_group_members (group_id, position, job_id, settled)
    select ?1, value ->> 1, unhex(value ->> 0), value ->> 2 from json_each(?2)";

/// Marks the live new members (?1, a JSON array of hex ids): their end is counted by trigger.
const MARK: &str = "update x_jobs set in_group = 1
    where in_group = 0 and id in (select unhex(value) from json_each(?1))";

/// The group ?1's counts after a join, as the join computed them under the write lock.
const COUNT: &str = concat!(
    "update x_job_groups set size = ?2, settled = ?3, need = ?4, done_at = ?5 where id = ?1
     returning ",
    group_columns!()
);

const GET: &str = concat!(
    "select ",
    group_columns!(),
    " from x_job_groups where id = ?1"
);

/// Up to ?3 members of group ?1 after position ?2, in join order, each with its job's state,
/// result and last error (nulls: the row is gone).
const MEMBERS: &str = "select m.position, m.job_id, j.state, j.result, j.last_error,
        j.last_error_code
    from x_job_group_members m
    left join x_jobs j on j.id = m.job_id
    where m.group_id = ?1 and m.position > ?2
    order by m.position
    limit ?3 + 0";

/// A waiter ?1, if waiting (`suspended`, or a batch's callback `delayed`), becomes ready, due
/// at ?2; answers its queue.
const WAKE: &str = "update x_jobs set state = 'ready', run_at = ?2, updated_at = ?2
    where id = ?1 and state in ('suspended', 'delayed')
    returning queue";

/// The due hint that announces a woken waiter's queue to the other processes' wake (0009).
const HINT: &str = "insert into x_job_due_hints (queue, at) values (?1, ?2)";

/// The members among the settled jobs ?1 (a JSON array of hex ids) still to count whose rows
/// are gone: removed while live.
const REMOVED: &str = "select distinct m.job_id from x_job_group_members m
    where m.settled = 0
      and m.job_id in (select unhex(value) from json_each(?1))
      and not exists (select 1 from x_jobs x where x.id = m.job_id)";

/// Counts the members ?1 (a JSON array of hex ids) in every group still counting them; answers
/// those groups.
const COUNT_REMOVED: &str = "update x_job_groups
    set settled = settled + (
        select count(*) from x_job_group_members m
        where m.group_id = x_job_groups.id and m.settled = 0
          and m.job_id in (select unhex(value) from json_each(?1))
    )
    where id in (
        select group_id from x_job_group_members
        where settled = 0 and job_id in (select unhex(value) from json_each(?1))
    )
    returning id";

const MARK_REMOVED: &str = "update x_job_group_members set settled = 1
    where settled = 0 and job_id in (select unhex(value) from json_each(?1))";

/// Marks done at ?2 those of the groups ?1 (a JSON array of hex ids) whose count reached their
/// need; answers their waiters.
const COMPLETE: &str = "update x_job_groups set done_at = ?2
    where id in (select unhex(value) from json_each(?1))
      and done_at is null and need is not null and settled >= need
    returning waiter";

/// The live children of the jobs ?1 (a JSON array of hex ids): the members of the groups they
/// are the parent of.
const LIVE_CHILDREN: &str = "select m.job_id from x_job_groups g
    join x_job_group_members m on m.group_id = g.id
    join x_jobs j on j.id = m.job_id
    where g.parent_id in (select unhex(value) from json_each(?1))
      and j.state in ('ready', 'delayed', 'running', 'suspended')
    order by g.created_at, m.position";

/// Cancels the live jobs ?1 (a JSON array of hex ids) at ?2; answers those it cancelled.
const CANCEL: &str = "update x_jobs set state = 'cancelled', visible_at = null, updated_at = ?2
    where id in (select unhex(value) from json_each(?1))
      and state in ('ready', 'delayed', 'running', 'suspended')
    returning id";

/// The `cancel` rows (at ?2, by ?3) of the jobs ?1 (a JSON array of hex ids) just cancelled.
const CANCEL_HISTORY: &str =
    "insert into x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select id, tenant_id, ?2, ?3, 'cancel', null from x_jobs
    where id in (select unhex(value) from json_each(?1))";

/// [`JobDriver::job_group_join`](crate::driver::JobDriver::job_group_join), in one write
/// transaction: open the group, file the members not yet in it after its last, count the ones
/// already ended (or gone) and mark the live ones for the trigger, set the need, and wake the
/// waiter if the join completed the group.
pub(crate) async fn join(
    writer: &Writer,
    params: &GroupJoinParams<'_>,
) -> Result<GroupRecord, JobError> {
    let failed = |e| classify(Op::JobEnqueue, e);
    let now = params.now;
    let mut conn = writer.acquire(Op::JobEnqueue).await?;
    let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
    let opened = sqlx::query(OPEN)
        .bind(params.group)
        .bind(params.waiter)
        .bind(params.parent)
        .bind(ts(now))
        .fetch_one(&mut *tx)
        .await
        .map_err(failed)?;
    let before = group_record(&opened, Op::JobEnqueue)?;
    let standing = sqlx::query(STANDING)
        .bind(params.group)
        .bind(hex_ids(params.members))
        .fetch_all(&mut *tx)
        .await
        .map_err(failed)?;
    let mut seen = HashSet::with_capacity(standing.len());
    let (mut filed, mut live) = (Vec::new(), Vec::new());
    let mut ended = 0u32;
    for row in &standing {
        let id: JobId = row.try_get("id").map_err(failed)?;
        let state: Option<JobState> = row.try_get("state").map_err(failed)?;
        let joined: bool = row.try_get("joined").map_err(failed)?;
        // In the group already (a replayed join), or named twice: added once.
        if joined || !seen.insert(id) {
            continue;
        }
        let is_live = state.is_some_and(JobState::is_live);
        if is_live {
            live.push(id);
        } else {
            ended += 1;
        }
        let position = before.size + filed.len() as u32;
        filed.push(serde_json::json!([
            id.simple().to_string(),
            position,
            u8::from(!is_live)
        ]));
    }
    let size = before.size + filed.len() as u32;
    if !filed.is_empty() {
        sqlx::query(FILE)
            .bind(params.group)
            .bind(serde_json::Value::Array(filed).to_string())
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    if !live.is_empty() {
        sqlx::query(MARK)
            .bind(hex_ids(&live))
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    let settled = before.settled + ended;
    let need = GroupRecord::need_after(before.need, params.need, size);
    let completes = before.done_at.is_none() && need.is_some_and(|need| settled >= need);
    let done_at = if completes { Some(now) } else { before.done_at };
    let counted = sqlx::query(COUNT)
        .bind(params.group)
        .bind(i64::from(size))
        .bind(i64::from(settled))
        .bind(need.map(i64::from))
        .bind(ts(done_at))
        .fetch_one(&mut *tx)
        .await
        .map_err(failed)?;
    let after = group_record(&counted, Op::JobEnqueue)?;
    if completes {
        wake_waiter(&mut tx, after.waiter, now, Op::JobEnqueue).await?;
    }
    tx.commit().await.map_err(failed)?;
    Ok(after)
}

/// [`JobDriver::job_group_get`](crate::driver::JobDriver::job_group_get).
pub(crate) async fn get(
    reader: &SqlitePool,
    group: GroupId,
) -> Result<Option<GroupRecord>, JobError> {
    let row = sqlx::query(GET)
        .bind(group)
        .fetch_optional(reader)
        .await
        .map_err(|e| classify(Op::JobGet, e))?;
    row.map(|row| group_record(&row, Op::JobGet)).transpose()
}

/// [`JobDriver::job_group_members`](crate::driver::JobDriver::job_group_members): one range of
/// the members' primary key, each joined to its job.
pub(crate) async fn members(
    reader: &SqlitePool,
    params: &GroupMembersParams,
) -> Result<Vec<GroupMember>, JobError> {
    let failed = |e| classify(Op::JobGet, e);
    sqlx::query_as(MEMBERS)
        .bind(params.group)
        .bind(params.after.map_or(-1, i64::from))
        .bind(i64::from(params.limit.min(GROUP_PAGE)))
        .fetch_all(reader)
        .await
        .map_err(failed)
}

/// [`JobDriver::job_group_wake`](crate::driver::JobDriver::job_group_wake): a read, and for a
/// done group a write transaction that makes its waiter, if `suspended`, ready and due at `now`.
/// A group read not done needs no write: the park was written before this call, so the settle
/// that completes the group later finds the waiter parked and wakes it itself.
pub(crate) async fn wake(
    writer: &Writer,
    reader: &SqlitePool,
    params: &GroupWakeParams,
) -> Result<Option<GroupRecord>, JobError> {
    let failed = |e| classify(Op::JobRelease, e);
    match get(reader, params.group).await? {
        Some(group) if group.done_at.is_some() => {
            let mut conn = writer.acquire(Op::JobRelease).await?;
            let mut tx = conn.begin_with("BEGIN IMMEDIATE").await.map_err(failed)?;
            wake_waiter(&mut tx, group.waiter, params.now, Op::JobRelease).await?;
            tx.commit().await.map_err(failed)?;
            Ok(Some(group))
        }
        other => Ok(other),
    }
}

/// The release pass's part for groups, in its transaction: the members among the settled jobs
/// `taken` whose rows were removed while live are counted at `now` (every other end was
/// counted by the trigger), completing the groups they bring to their need.
pub(crate) async fn count_removed(
    conn: &mut SqliteConnection,
    taken: &[JobId],
    now: Timestamp,
) -> Result<(), JobError> {
    let failed = |e| classify(Op::JobRelease, e);
    let removed: Vec<JobId> = sqlx::query_scalar(REMOVED)
        .bind(hex_ids(taken))
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    if removed.is_empty() {
        return Ok(());
    }
    let removed = hex_ids(&removed);
    let groups: Vec<GroupId> = sqlx::query_scalar(COUNT_REMOVED)
        .bind(&removed)
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    sqlx::query(MARK_REMOVED)
        .bind(&removed)
        .execute(&mut *conn)
        .await
        .map_err(failed)?;
    let waiters: Vec<JobId> = sqlx::query_scalar(COMPLETE)
        .bind(hex_ids(&groups))
        .bind(ts(now))
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    for waiter in waiters {
        wake_waiter(conn, waiter, now, Op::JobRelease).await?;
    }
    Ok(())
}

/// The cancel's cascade, in its transaction: the live children of `id` are cancelled at `now`,
/// then theirs, a generation at a time (a parent before its children, so a parked parent is
/// never woken by its own children's cancel), each with its `cancel` history row by `actor`.
/// Each job is visited once, whatever loops the links hold.
pub(crate) async fn cancel_children(
    tx: &mut SqliteConnection,
    id: JobId,
    now: Timestamp,
    actor: Option<&str>,
) -> Result<(), JobError> {
    let failed = |e| classify(Op::JobCancel, e);
    let mut seen: HashSet<JobId> = HashSet::from([id]);
    let mut generation = vec![id];
    while !generation.is_empty() {
        let children: Vec<JobId> = sqlx::query_scalar(LIVE_CHILDREN)
            .bind(hex_ids(&generation))
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        let children: Vec<JobId> = children.into_iter().filter(|c| seen.insert(*c)).collect();
        if children.is_empty() {
            break;
        }
        generation = sqlx::query_scalar(CANCEL)
            .bind(hex_ids(&children))
            .bind(ts(now))
            .fetch_all(&mut *tx)
            .await
            .map_err(failed)?;
        sqlx::query(CANCEL_HISTORY)
            .bind(hex_ids(&generation))
            .bind(ts(now))
            .bind(actor)
            .execute(&mut *tx)
            .await
            .map_err(failed)?;
    }
    Ok(())
}

/// Makes `waiter`, if `suspended`, ready and due at `now`, with a due hint for the other
/// processes' wake.
async fn wake_waiter(
    conn: &mut SqliteConnection,
    waiter: JobId,
    now: Timestamp,
    operation: Op,
) -> Result<(), JobError> {
    let failed = |e| classify(operation, e);
    let queues: Vec<String> = sqlx::query_scalar(WAKE)
        .bind(waiter)
        .bind(ts(now))
        .fetch_all(&mut *conn)
        .await
        .map_err(failed)?;
    for queue in queues {
        sqlx::query(HINT)
            .bind(queue)
            .bind(ts(now))
            .execute(&mut *conn)
            .await
            .map_err(failed)?;
    }
    Ok(())
}

/// A group row ([`group_columns!`]).
fn group_record(row: &SqliteRow, operation: Op) -> Result<GroupRecord, JobError> {
    GroupRecord::from_row(row).map_err(|e| classify(operation, e))
}
