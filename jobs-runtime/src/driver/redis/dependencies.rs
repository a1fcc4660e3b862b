//! Dependencies between jobs on Redis. A dependency may live in another queue, so in another
//! slot of a cluster: the steps below each run one script on one queue (`lua/dependencies.lua`)
//! and are ordered so that no settle is missed.
//!
//! The enqueue inserts the dependent (blocked, never due) with the ordinary enqueue script, so
//! its key is deduped as any job's; marks each dependency (`hd`, and the dependent in its set),
//! which answers its state at that moment; gives the dependent its judged start and edges; and
//! judges it once more from the states read after that, so a dependency that settled between
//! its mark and the block is seen. Any settle after the block finds the dependent blocked.
//!
//! A settle of a job with dependents notes it in its queue's REL set in the same script
//! (`change` in `lua/lib.lua`) and answers 2; the driver then runs the release pass on that
//! queue: each noted job's dependents are judged from their dependencies' states and a verdict
//! lands only on a dependent still blocked, so two passes judging one dependent agree. A cancel
//! that notes more is followed into its queue. The noted set is cleared after judging, so a
//! process that dies mid-pass leaves it for the next pass on that queue.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::codec::micros;
use super::enqueue::{malformed, parse_id};
use super::scripts;
use super::RedisDriver;
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::driver::Operation as Op;
use crate::error::JobError;

/// Queues one release pass visits at most (each a cancel's cascade into another queue).
const RELEASE_ROUNDS: usize = 64;

/// Runs a verb of `lua/dependencies.lua` on `queue`.
async fn call<T: redis::FromRedisValue>(
    driver: &RedisDriver,
    op: Op,
    queue: &str,
    verb: &str,
    args: &[String],
) -> Result<T, JobError> {
    scripts::verb_on_queue(driver, &scripts::DEPENDENCIES, op, queue, verb, args).await
}

/// The states of `ids`, all of `queue` (`None`: gone).
pub(super) async fn states(
    driver: &RedisDriver,
    op: Op,
    queue: &str,
    ids: &[JobId],
) -> Result<Vec<Option<JobState>>, JobError> {
    let args: Vec<String> = ids.iter().map(JobId::to_string).collect();
    let answer: Vec<String> = call(driver, op, queue, "states", &args).await?;
    if answer.len() != ids.len() {
        return Err(malformed());
    }
    answer.iter().map(|s| parse_state(s)).collect()
}

fn parse_state(text: &str) -> Result<Option<JobState>, JobError> {
    if text.is_empty() {
        return Ok(None);
    }
    JobState::parse(text).map(Some)
}

/// A dependent's edges as stored (`dp`): `[[id, queue], ...]`.
type Edges = Vec<(JobId, String)>;

fn by_queue(edges: &Edges) -> BTreeMap<&str, Vec<JobId>> {
    let mut grouped: BTreeMap<&str, Vec<JobId>> = BTreeMap::new();
    for (id, queue) in edges {
        grouped.entry(queue.as_str()).or_default().push(*id);
    }
    grouped
}

/// Every dependency's state, in the edges' order.
async fn edge_states(
    driver: &RedisDriver,
    op: Op,
    edges: &Edges,
) -> Result<DependencyStates, JobError> {
    let mut found: BTreeMap<JobId, Option<JobState>> = BTreeMap::new();
    for (queue, ids) in by_queue(edges) {
        for (id, state) in ids.iter().zip(states(driver, op, queue, &ids).await?) {
            found.insert(*id, state);
        }
    }
    Ok(edges
        .iter()
        .map(|(id, _)| (*id, found.get(id).copied().flatten()))
        .collect())
}

/// Enqueues a job with dependencies (see the module's note for the order of the steps).
pub(super) async fn enqueue_dependent(
    driver: &RedisDriver,
    request: &EnqueueRequest,
    dependencies: &Dependencies,
) -> Result<EnqueueResult, JobError> {
    let op = Op::JobEnqueue;
    let now = request.now;
    check_dependencies(request.id, dependencies, request.run_at, now)?;
    let mut edges: Edges = Vec::with_capacity(dependencies.on.len());
    for id in &dependencies.on {
        match driver.queue_of(op, id).await? {
            Some(queue) => edges.push((*id, queue.to_string())),
            None => return Err(dependency_not_found(*id)),
        }
    }
    let blocked = EnqueueRequest {
        run_at: blocked_until(),
        dependencies: None,
        ..request.clone()
    };
    let result = super::enqueue::enqueue(driver, std::slice::from_ref(&blocked), now)
        .await?
        .into_iter()
        .next()
        .ok_or_else(malformed)?;
    if result.deduped {
        return Ok(result);
    }
    let tenant = request.tenant_id.clone().unwrap_or_default();
    let mut marked: Vec<(&str, Vec<JobId>)> = Vec::new();
    // The states of the jobs found in the tenant (a missing one answers '').
    let mut found: BTreeMap<JobId, JobState> = BTreeMap::new();
    for (queue, ids) in by_queue(&edges) {
        let mut args = vec![
            tenant.clone(),
            request.id.to_string(),
            request.queue.clone(),
        ];
        args.extend(ids.iter().map(JobId::to_string));
        let answer: Vec<String> = call(driver, op, queue, "mark", &args).await?;
        if answer.len() != ids.len() {
            return Err(malformed());
        }
        for (id, state) in ids.iter().zip(&answer) {
            if let Some(state) = parse_state(state)? {
                found.insert(*id, state);
            }
        }
        marked.push((queue, ids));
    }
    let start = match dependencies.start_among(&found, request.run_at) {
        Ok(start) => start,
        Err(refusal) => {
            // Taken back: the marks, then the job, as if it was never enqueued.
            for (queue, ids) in &marked {
                let mut args = vec![request.id.to_string(), request.queue.clone()];
                args.extend(ids.iter().map(JobId::to_string));
                let _: i64 = call(driver, op, queue, "unmark", &args).await?;
            }
            super::enqueue::take_back(driver, &[(request.queue.as_str(), request.id)]).await;
            return Err(refusal);
        }
    };
    let stored: Vec<(String, &str)> = edges
        .iter()
        .map(|(id, queue)| (id.to_string(), queue.as_str()))
        .collect();
    let args = vec![
        request.id.to_string(),
        micros(now),
        start.state.as_str().to_string(),
        micros(start.run_at),
        start.last_error().unwrap_or_default(),
        start.last_error_code().unwrap_or_default().to_string(),
        dependencies.on_failure.as_str().to_string(),
        serde_json::to_string(&stored).map_err(|_| malformed())?,
        driver.keys().wake_channel(),
    ];
    let _: i64 = call(driver, op, &request.queue, "block", &args).await?;
    if start.state == JobState::Suspended {
        judge(driver, op, request.id, &request.queue, now).await?;
    }
    Ok(result)
}

/// Judges one dependent: answers the verdict that landed on it, if any (`None`: it stays
/// blocked, or is no longer blocked).
async fn judge(
    driver: &RedisDriver,
    op: Op,
    id: JobId,
    queue: &str,
    now: Timestamp,
) -> Result<Option<Verdict>, JobError> {
    let until = micros(blocked_until());
    let read: Vec<String> =
        call(driver, op, queue, "read", &[id.to_string(), until.clone()]).await?;
    // Empty: it is no longer blocked (judged already, or gone).
    let (policy, edges) = match <[String; 2]>::try_from(read) {
        Ok([policy, edges]) => (policy, edges),
        Err(read) if read.is_empty() => return Ok(None),
        Err(_) => return Err(malformed()),
    };
    let edges: Vec<(String, String)> = serde_json::from_str(&edges).map_err(|_| malformed())?;
    let edges: Edges = edges
        .into_iter()
        .map(|(id, queue)| Ok((parse_id(&id)?, queue)))
        .collect::<Result<_, JobError>>()?;
    let verdict = Verdict::of(
        DependencyFailure::from_stored(&policy),
        edge_states(driver, op, &edges).await?,
    );
    let (word, start) = match &verdict {
        Verdict::Blocked => return Ok(None),
        Verdict::Release => ("ready", verdict.clone().start(now)),
        Verdict::Cancel { .. } => ("cancelled", verdict.clone().start(now)),
    };
    let args = vec![
        id.to_string(),
        until,
        micros(now),
        word.to_string(),
        start.last_error().unwrap_or_default(),
        start.last_error_code().unwrap_or_default().to_string(),
        driver.keys().wake_channel(),
    ];
    let landed: i64 = call(driver, op, queue, "apply", &args).await?;
    Ok((landed == 1).then_some(verdict))
}

/// The release pass after a settle that ended a job with dependents or groups counting it in
/// `queues` (or a verb that may have): a failure is logged, never the settle's; what it left
/// stays noted.
pub(super) async fn release_after(driver: &RedisDriver, queues: Vec<Arc<str>>, now: Timestamp) {
    if let Err(error) = release_pending(driver, queues, now).await {
        tracing::warn!(
            code = error.code().map(|c| c.as_str()),
            "judging the dependents of settled jobs or counting them in their groups failed; the next pass does it: {}",
            error.summary()
        );
    }
}

/// Judges the dependents of every job noted on `queues`, following cancels into the queues of
/// the dependents they end, and counts the group members noted on each queue it visits
/// (`groups.rs`).
pub(super) async fn release_pending(
    driver: &RedisDriver,
    mut queues: Vec<Arc<str>>,
    now: Timestamp,
) -> Result<(), JobError> {
    let op = Op::JobRelease;
    let mut rounds = 0;
    while let Some(queue) = queues.pop() {
        rounds += 1;
        if rounds > RELEASE_ROUNDS {
            break;
        }
        let answer: Vec<String> = call(driver, op, &queue, "pending", &[]).await?;
        let mut taken = Vec::new();
        let mut rest = answer.iter();
        while let Some(id) = rest.next() {
            taken.push(id.clone());
            let n: usize = rest
                .next()
                .ok_or_else(malformed)?
                .parse()
                .map_err(|_| malformed())?;
            for _ in 0..n {
                let member = rest.next().ok_or_else(malformed)?;
                let (dependent, dependent_queue) = member.split_once('\0').ok_or_else(malformed)?;
                let dependent = parse_id(dependent)?;
                let landed = judge(driver, op, dependent, dependent_queue, now).await?;
                if matches!(landed, Some(Verdict::Cancel { .. }))
                    && !queues.iter().any(|q| &**q == dependent_queue)
                {
                    queues.push(Arc::from(dependent_queue));
                }
            }
        }
        if !taken.is_empty() {
            let _: i64 = call(driver, op, &queue, "done", &taken).await?;
        }
        // The members that ended here are counted in their groups.
        super::groups::count_pending(driver, &queue, now).await?;
    }
    Ok(())
}

/// Every queue of the store (a verb that may have ended a job anywhere).
pub(super) async fn every_queue(driver: &RedisDriver) -> Vec<Arc<str>> {
    match driver.queues(Op::JobRelease).await {
        Ok(queues) => queues.into_iter().map(Arc::from).collect(),
        Err(_) => Vec::new(),
    }
}

/// A job's links ([`JobLinks`]).
pub(super) async fn links(driver: &RedisDriver, id: JobId) -> Result<JobLinks, JobError> {
    let op = Op::JobGet;
    let Some(queue) = driver.queue_of(op, &id).await? else {
        return Ok(JobLinks::default());
    };
    let answer: Vec<String> = call(driver, op, &queue, "links", &[id.to_string()]).await?;
    let (head, members) = answer.split_at(answer.len().min(2));
    let [policy, edges] = <&[String; 2]>::try_from(head).map_err(|_| malformed())?;
    let mut links = JobLinks::default();
    if !edges.is_empty() {
        let stored: Vec<(String, String)> = serde_json::from_str(edges).map_err(|_| malformed())?;
        let edges: Edges = stored
            .into_iter()
            .map(|(id, queue)| Ok((parse_id(&id)?, queue)))
            .collect::<Result<_, JobError>>()?;
        let mut depends_on = edge_states(driver, op, &edges).await?;
        depends_on.sort_by_key(|(id, _)| *id);
        links.depends_on = depends_on;
        links.on_dependency_failure = Some(DependencyFailure::from_stored(policy));
    }
    for member in members {
        let (dependent, _) = member.split_once('\0').ok_or_else(malformed)?;
        links.dependents.push(parse_id(dependent)?);
    }
    links.dependents.sort();
    links.dependents.truncate(MAX_DEPENDENCIES);
    super::groups::links(driver, &queue, id, &mut links).await?;
    Ok(links)
}
