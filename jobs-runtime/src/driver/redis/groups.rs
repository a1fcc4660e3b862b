//! Groups of jobs awaited together on Redis (`records/group.rs`): the children a parent invoked
//! and a batch's members. A group lives in its waiter's queue (`lua/groups.lua`; lib.lua names
//! the keys), so the count that completes it, the mark `done` and the waiter made due are one
//! script there, and so is the waiter's own wake after it parks ([`wake`]): either the count
//! sees the waiter parked, or the wake sees the group done. A group is found by its id through
//! the id index, as a run is (on one server written by the join script, on a cluster before it).
//!
//! A member that stops being live is noted in its queue by the script that ended it (`change`
//! and `delete` in `lua/lib.lua`: its groups move to its ended set, in a few calls however
//! large the groups), which answers 2 as a dependency's settle does; the pass after the settle
//! ([`count_pending`], run by `dependencies::release_pending` on each queue it visits) counts it
//! in each group: in the same script when the group lives in the member's queue (an invoke's
//! children on the parent's queue), else by one script in the group's queue and a last one
//! clearing the note. Counting is idempotent (each member's mark in its group), so a pass cut
//! short is finished by the next, and a member counts once whichever path ended it.
//!
//! A join marks the members in their own queues: in the join's script for those in the group's
//! queue; for others one script per queue marks each live one (its end is then noted) and
//! answers the ones already ended, which a last script counts. A member that ends between the
//! join and its mark is seen ended by the mark; one that ends after it is noted.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::{fields, micros, time};
use super::enqueue::{malformed, parse_id};
use super::scripts;
use super::RedisDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::{JobCancelParams, Operation as Op};
use crate::error::{ErrorCode, JobError};

/// Noted members one pass script takes at most (each costs a few calls per group it is in).
const TAKE_LIMIT: usize = 500;

/// Children one cancel script takes at most.
const CANCEL_PAGE: usize = 1_000;

/// Runs a verb of `lua/groups.lua` on `queue`.
async fn call<T: redis::FromRedisValue>(
    driver: &RedisDriver,
    op: Op,
    queue: &str,
    verb: &str,
    args: &[String],
) -> Result<T, JobError> {
    scripts::verb_on_queue(driver, &scripts::GROUPS, op, queue, verb, args).await
}

/// A group's stored fields as its record; `None` when there are none (no such group).
fn record(group: GroupId, pairs: Vec<String>) -> Result<Option<GroupRecord>, JobError> {
    if pairs.is_empty() {
        return Ok(None);
    }
    let f = fields(pairs);
    let text = |name: &str| f.get(name).map(String::as_str).ok_or_else(malformed);
    let number = |text: &str| text.parse::<u32>().map_err(|_| malformed());
    Ok(Some(GroupRecord {
        id: group,
        waiter: parse_id(text("waiter")?)?,
        parent: f.get("parent").map(|p| parse_id(p)).transpose()?,
        size: number(text("size")?)?,
        settled: number(text("settled")?)?,
        need: f.get("need").map(|n| number(n)).transpose()?,
        done_at: f.get("done").map(|at| time(at)).transpose()?,
        created_at: time(text("created")?)?,
    }))
}

/// The queue of each of `ids` (`None`: no such job): this process' memory, else the id index,
/// one read per shard.
async fn queues_of(
    driver: &RedisDriver,
    op: Op,
    ids: &[JobId],
) -> Result<Vec<Option<Arc<str>>>, JobError> {
    let mut found: Vec<Option<Arc<str>>> = Vec::with_capacity(ids.len());
    let mut unknown: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    {
        let remembered = driver.inner.queue_of.lock().expect("queue map poisoned");
        for (i, id) in ids.iter().enumerate() {
            let queue = remembered.get(id).cloned();
            if queue.is_none() {
                unknown
                    .entry(driver.keys().id_index(id))
                    .or_default()
                    .push(i);
            }
            found.push(queue);
        }
    }
    let reads = unknown.iter().map(|(shard, at)| {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(shard);
        for &i in at {
            cmd.arg(ids[i].to_string());
        }
        async move { driver.conn().query::<Vec<Option<String>>>(op, &cmd).await }
    });
    for ((_, at), queues) in unknown
        .iter()
        .zip(futures::future::try_join_all(reads).await?)
    {
        if queues.len() != at.len() {
            return Err(malformed());
        }
        for (&i, queue) in at.iter().zip(queues) {
            found[i] = queue.map(Arc::from);
        }
    }
    Ok(found)
}

/// [`JobDriver::job_group_join`](crate::driver::JobDriver::job_group_join).
pub(super) async fn join(
    driver: &RedisDriver,
    params: &GroupJoinParams<'_>,
) -> Result<GroupRecord, JobError> {
    let op = Op::JobEnqueue;
    let Some(queue) = driver.queue_of(op, &params.waiter).await? else {
        return Err(RedisDriver::unknown_job(
            ErrorCode::JobNotFound,
            &params.waiter,
        ));
    };
    let member_queues = queues_of(driver, op, params.members).await?;
    let entries: Vec<(JobId, &str)> = params
        .members
        .iter()
        .zip(&member_queues)
        .map(|(id, queue)| (*id, queue.as_deref().unwrap_or("")))
        .collect();
    // The parent's children live in its queue: the join's own when it is the waiter (an invoke).
    let children_here = match params.parent {
        Some(parent) if parent != params.waiter => {
            if let Some(parent_queue) = driver.queue_of(op, &parent).await? {
                let mut args = vec![parent.to_string()];
                args.extend(entries.iter().map(|(id, q)| format!("{id}\0{q}")));
                let _: i64 = call(driver, op, &parent_queue, "children", &args).await?;
            }
            false
        }
        Some(_) => true,
        None => false,
    };
    // On one server the join script files the group in the id index; a cluster keeps the index
    // in other slots, so it is written first, apart (once per process: a group this process
    // joined before is filed).
    let filed = driver
        .inner
        .queue_of
        .lock()
        .expect("queue map poisoned")
        .contains_key(&params.group);
    let index = if filed {
        String::new()
    } else if driver.is_cluster() {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(driver.keys().id_index(&params.group))
            .arg(params.group.to_string())
            .arg(&*queue);
        driver.conn().query::<()>(op, &cmd).await?;
        String::new()
    } else {
        driver.keys().id_index(&params.group)
    };
    let (need, n) = match params.need {
        GroupNeed::Keep => ("keep", 0),
        GroupNeed::Count(n) => ("count", n),
        GroupNeed::All => ("all", 0),
    };
    let mut args = vec![
        params.group.to_string(),
        params.waiter.to_string(),
        params.parent.map(|p| p.to_string()).unwrap_or_default(),
        micros(params.now),
        need.to_string(),
        n.to_string(),
        queue.to_string(),
        driver.keys().wake_channel(),
        index,
        if children_here { "1" } else { "0" }.to_string(),
    ];
    for (id, member_queue) in &entries {
        args.push(id.to_string());
        args.push(member_queue.to_string());
    }
    let (mut pairs, elsewhere): (Vec<String>, Vec<String>) =
        call(driver, op, &queue, "join", &args).await?;
    driver.remember(params.group, &queue);
    if !elsewhere.is_empty() {
        pairs = mark_elsewhere(driver, params, &queue, &elsewhere).await?;
    }
    record(params.group, pairs)?.ok_or_else(malformed)
}

/// The join's members in other queues than the group's (`elsewhere`: (id, queue) pairs): each
/// queue marks its own, then the group counts those already ended. Answers the group's fields.
async fn mark_elsewhere(
    driver: &RedisDriver,
    params: &GroupJoinParams<'_>,
    group_queue: &str,
    elsewhere: &[String],
) -> Result<Vec<String>, JobError> {
    let op = Op::JobEnqueue;
    let mut by_queue: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for pair in elsewhere.chunks_exact(2) {
        by_queue.entry(&pair[1]).or_default().push(&pair[0]);
    }
    let parent = params.parent.map(|p| p.to_string()).unwrap_or_default();
    let mut ended = Vec::new();
    for (queue, members) in by_queue {
        let mut args = vec![
            params.group.to_string(),
            group_queue.to_string(),
            parent.clone(),
        ];
        args.extend(members.iter().map(|m| m.to_string()));
        let live: Vec<String> = call(driver, op, queue, "mark", &args).await?;
        if live.len() != members.len() {
            return Err(malformed());
        }
        for (member, live) in members.into_iter().zip(live) {
            if live == "0" {
                ended.push(params.group.to_string());
                ended.push(member.to_string());
            }
        }
    }
    let mut args = vec![
        micros(params.now),
        driver.keys().wake_channel(),
        params.group.to_string(),
    ];
    args.extend(ended);
    let (pairs, dropped): (Vec<String>, Vec<String>) =
        call(driver, op, group_queue, "count", &args).await?;
    forget_dropped(driver, op, &dropped).await?;
    Ok(pairs)
}

/// [`JobDriver::job_group_get`](crate::driver::JobDriver::job_group_get).
pub(super) async fn get(
    driver: &RedisDriver,
    group: GroupId,
) -> Result<Option<GroupRecord>, JobError> {
    let op = Op::JobGet;
    let Some(queue) = driver.queue_of(op, &group).await? else {
        return Ok(None);
    };
    let pairs: Vec<String> = call(driver, op, &queue, "get", &[group.to_string()]).await?;
    record(group, pairs)
}

/// [`JobDriver::job_group_wake`](crate::driver::JobDriver::job_group_wake): one script in the
/// group's queue, so it is ordered with every count there.
pub(super) async fn wake(
    driver: &RedisDriver,
    params: &GroupWakeParams,
) -> Result<Option<GroupRecord>, JobError> {
    let op = Op::JobRelease;
    let Some(queue) = driver.queue_of(op, &params.group).await? else {
        return Ok(None);
    };
    let args = [
        params.group.to_string(),
        micros(params.now),
        driver.keys().wake_channel(),
    ];
    let pairs: Vec<String> = call(driver, op, &queue, "wake", &args).await?;
    record(params.group, pairs)
}

/// One member's outcome as a script answers it: state, result, error, error code.
fn outcome(position: u32, id: JobId, values: &[Option<String>]) -> Result<GroupMember, JobError> {
    let [state, result, error, code] = <&[Option<String>; 4]>::try_from(values)
        .map_err(|_| malformed())?
        .clone();
    Ok(GroupMember {
        position,
        id,
        state: state.as_deref().map(JobState::parse).transpose()?,
        result: result
            .map(|r| serde_json::from_str(&r).map_err(|_| malformed()))
            .transpose()?,
        last_error: error,
        last_error_code: code,
    })
}

/// [`JobDriver::job_group_members`](crate::driver::JobDriver::job_group_members): one script in
/// the group's queue reads the page and the members there; one per other queue the rest.
pub(super) async fn members(
    driver: &RedisDriver,
    params: &GroupMembersParams,
) -> Result<Vec<GroupMember>, JobError> {
    let op = Op::JobGet;
    let Some(queue) = driver.queue_of(op, &params.group).await? else {
        return Ok(Vec::new());
    };
    let first = params.after.map_or(0, |p| p.saturating_add(1));
    let args = [
        params.group.to_string(),
        first.to_string(),
        params.limit.min(GROUP_PAGE).to_string(),
        queue.to_string(),
    ];
    let answer: Vec<Option<String>> = call(driver, op, &queue, "members", &args).await?;
    if !answer.len().is_multiple_of(6) {
        return Err(malformed());
    }
    let mut page = Vec::with_capacity(answer.len() / 6);
    let mut elsewhere: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, row) in answer.chunks_exact(6).enumerate() {
        let id = parse_id(row[0].as_deref().ok_or_else(malformed)?)?;
        let position = first + i as u32;
        match row[1].as_deref() {
            Some(member_queue) if !member_queue.is_empty() => {
                elsewhere.entry(member_queue).or_default().push(i);
                page.push(outcome(position, id, &[None, None, None, None])?);
            }
            _ => page.push(outcome(position, id, &row[2..])?),
        }
    }
    for (member_queue, at) in elsewhere {
        let ids: Vec<String> = at.iter().map(|&i| page[i].id.to_string()).collect();
        let read: Vec<Option<String>> = call(driver, op, member_queue, "fields", &ids).await?;
        if read.len() != at.len() * 4 {
            return Err(malformed());
        }
        for (&i, values) in at.iter().zip(read.chunks_exact(4)) {
            page[i] = outcome(page[i].position, page[i].id, values)?;
        }
    }
    Ok(page)
}

/// The group links of job `id` of `queue` into `links`: its parent, its batch and its first
/// [`MAX_DEPENDENCIES`] children with their states.
pub(super) async fn links(
    driver: &RedisDriver,
    queue: &str,
    id: JobId,
    links: &mut JobLinks,
) -> Result<(), JobError> {
    let op = Op::JobGet;
    let args = [
        id.to_string(),
        MAX_DEPENDENCIES.to_string(),
        queue.to_string(),
    ];
    let answer: Vec<String> = call(driver, op, queue, "links", &args).await?;
    let (head, children) = answer.split_at(answer.len().min(2));
    let [parent, batch] = <&[String; 2]>::try_from(head).map_err(|_| malformed())?;
    let optional_id = |text: &str| (!text.is_empty()).then(|| parse_id(text)).transpose();
    links.parent = optional_id(parent)?;
    links.batch = optional_id(batch)?;
    if !children.len().is_multiple_of(3) {
        return Err(malformed());
    }
    let mut elsewhere: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, child) in children.chunks_exact(3).enumerate() {
        let state = if child[2].is_empty() {
            None
        } else {
            Some(JobState::parse(&child[2])?)
        };
        links.children.push((parse_id(&child[0])?, state));
        if !child[1].is_empty() {
            elsewhere.entry(&child[1]).or_default().push(i);
        }
    }
    for (child_queue, at) in elsewhere {
        let ids: Vec<JobId> = at.iter().map(|&i| links.children[i].0).collect();
        let states = super::dependencies::states(driver, op, child_queue, &ids).await?;
        for (&i, state) in at.iter().zip(states) {
            links.children[i].1 = state;
        }
    }
    Ok(())
}

/// The pass after a settle on `queue`: counts its noted members in their groups, here in the
/// take's own script, elsewhere one script per group queue, then clears what was counted.
pub(super) async fn count_pending(
    driver: &RedisDriver,
    queue: &str,
    now: Timestamp,
) -> Result<(), JobError> {
    let op = Op::JobRelease;
    let channel = driver.keys().wake_channel();
    loop {
        let args = [
            queue.to_string(),
            micros(now),
            channel.clone(),
            TAKE_LIMIT.to_string(),
        ];
        let (taken, elsewhere, dropped): (String, Vec<String>, Vec<String>) =
            call(driver, op, queue, "take", &args).await?;
        forget_dropped(driver, op, &dropped).await?;
        if !elsewhere.is_empty() {
            // (member, '<group>\0<group queue>') pairs, counted by group queue.
            let mut by_queue: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for pair in elsewhere.chunks_exact(2) {
                let (group, group_queue) = pair[1].split_once('\0').ok_or_else(malformed)?;
                let counted = by_queue
                    .entry(group_queue)
                    .or_insert_with(|| vec![micros(now), channel.clone(), String::new()]);
                counted.push(group.to_string());
                counted.push(pair[0].clone());
            }
            for (group_queue, args) in by_queue {
                let (_, dropped): (Vec<String>, Vec<String>) =
                    call(driver, op, group_queue, "count", &args).await?;
                forget_dropped(driver, op, &dropped).await?;
            }
            let _: i64 = call(driver, op, queue, "done", &elsewhere).await?;
        }
        if taken.parse::<usize>().map_err(|_| malformed())? < TAKE_LIMIT {
            return Ok(());
        }
    }
}

/// Takes dropped groups out of the id index.
async fn forget_dropped(driver: &RedisDriver, op: Op, dropped: &[String]) -> Result<(), JobError> {
    for group in dropped {
        let group = parse_id(group)?;
        driver.forget(&group);
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(driver.keys().id_index(&group))
            .arg(group.to_string());
        driver.conn().query::<()>(op, &cmd).await?;
    }
    Ok(())
}

/// Cancels the live children of `parent` (of `queue`), and theirs, each with a `cancel` history
/// row by the cancel's actor: a page of a parent's children per script in its queue, the ones in
/// other queues by one script per queue. Answers the queues it cancelled in, for the passes.
pub(super) async fn cancel_children(
    driver: &RedisDriver,
    params: &JobCancelParams,
    parent: JobId,
    queue: Arc<str>,
) -> Result<Vec<Arc<str>>, JobError> {
    let op = Op::JobCancel;
    let now = micros(params.now);
    let actor = params.actor.clone().unwrap_or_default();
    let mut touched = vec![queue.clone()];
    let mut parents = vec![(parent, queue)];
    while let Some((parent, queue)) = parents.pop() {
        let mut first = 0;
        loop {
            let args = [
                parent.to_string(),
                now.clone(),
                actor.clone(),
                first.to_string(),
                CANCEL_PAGE.to_string(),
                queue.to_string(),
            ];
            let (read, deeper, elsewhere): (String, Vec<String>, Vec<String>) =
                call(driver, op, &queue, "cancel_children", &args).await?;
            for child in deeper {
                parents.push((parse_id(&child)?, queue.clone()));
            }
            let mut by_queue: BTreeMap<&str, Vec<String>> = BTreeMap::new();
            for pair in elsewhere.chunks_exact(2) {
                by_queue
                    .entry(&pair[1])
                    .or_insert_with(|| vec![now.clone(), actor.clone()])
                    .push(pair[0].clone());
            }
            for (child_queue, args) in by_queue {
                let deeper: Vec<String> = call(driver, op, child_queue, "cancel", &args).await?;
                let child_queue: Arc<str> = Arc::from(child_queue);
                for child in deeper {
                    parents.push((parse_id(&child)?, child_queue.clone()));
                }
                if !touched.contains(&child_queue) {
                    touched.push(child_queue);
                }
            }
            let read: usize = read.parse().map_err(|_| malformed())?;
            if read < CANCEL_PAGE {
                break;
            }
            first += CANCEL_PAGE;
        }
    }
    Ok(touched)
}
