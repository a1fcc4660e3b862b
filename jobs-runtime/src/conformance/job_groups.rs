//! Groups of jobs awaited together (`records/group.rs`): a join files members in order and
//! counts the ones already settled; each member's settle counts once; the count reaching the
//! need marks the group done and makes its parked waiter due, once; a waiter still running is
//! made due by its own `job_group_wake`; a batch stays open until a join closes it; members
//! page back in join order with their outcomes; cancelling a parent cancels its children and
//! theirs; the links show parent, children and batch. Then the same through a worker:
//! `run.invoke`, `run.invoke_all`, `first(n)`, a timeout, and cancellation both ways.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use super::worker::{descriptor, subject, tick, Subject};
use super::*;
use crate::client::Jobs;
use crate::clock::TestClock;
use crate::descriptor::{JobDescriptor, KeptResult};
use crate::driver::{
    GroupJoinParams, GroupMembersParams, GroupNeed, GroupRecord, GroupWakeParams, JobCancelParams,
};
use crate::invoke::Invocable;
use crate::job::Job;
use crate::registry::Registry;
use crate::run::Run;
use crate::worker::{ExecutionOutcome, JobExecution, Worker};

async fn join(
    d: &dyn JobDriver,
    group: GroupId,
    waiter: JobId,
    parent: Option<JobId>,
    members: &[JobId],
    need: GroupNeed,
    now: Timestamp,
) -> GroupRecord {
    d.job_group_join(&GroupJoinParams {
        group,
        waiter,
        parent,
        members,
        need,
        now,
    })
    .await
    .unwrap_or_else(|e| panic!("job_group_join failed: {e}"))
}

async fn group_of(d: &dyn JobDriver, group: GroupId) -> GroupRecord {
    d.job_group_get(group)
        .await
        .unwrap_or_else(|e| panic!("job_group_get failed: {e}"))
        .unwrap_or_else(|| panic!("no group {group}"))
}

/// Claims `id` among what is due and parks it until `until` (an invoke's poll).
async fn claim_and_park(d: &dyn JobDriver, id: JobId, now: Timestamp, until: Timestamp) {
    let job = claim_one(d, "parent-worker", now).await;
    assert_eq!(job.id, id, "the parent is the one due");
    let mut park = nack_params(id, &job.by, NackTarget::Park, until, now);
    park.counts_as_attempt = false;
    park.error = None;
    park.error_code = None;
    assert!(nack(d, &park).await);
}

/// Runs the one due job `id` to `done` with `result`.
async fn complete_with(d: &dyn JobDriver, id: JobId, result: Value, now: Timestamp) {
    let job = claim_one(d, "child-worker", now).await;
    assert_eq!(job.id, id, "the child is the one due");
    let landed = d
        .job_ack(&AckParams {
            job_id: id,
            by: job.by,
            result: Some(result),
            now,
        })
        .await
        .unwrap_or_else(|e| panic!("ack failed: {e}"));
    assert!(landed);
}

/// Runs the one due job `id` into the dead letters.
async fn bury(d: &dyn JobDriver, id: JobId, now: Timestamp) {
    let job = claim_one(d, "child-worker", now).await;
    assert_eq!(job.id, id, "the child is the one due");
    assert!(
        nack(
            d,
            &nack_params(id, &job.by, NackTarget::DeadLetter, now, now)
        )
        .await
    );
}

/// A parked parent waits for every child: each settle counts once, the parent stays parked
/// until the last, then is made `ready` and due at that settle, once; the members read back in
/// join order with their outcomes; the links show parent and children.
pub async fn job_group_counts_each_settle_and_wakes_the_parked_waiter_once(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let parent = enqueue_key(d, "parent").await;
    claim_and_park(d, parent, t0(), at(3600)).await;
    let mut first = request("conformance.child", "child-1");
    first.run_at = at(1);
    let mut second = request("conformance.child", "child-2");
    second.run_at = at(2);
    let children = [enqueue(d, &first).await.id, enqueue(d, &second).await.id];
    let group = Uuid::now_v7();
    let joined = join(
        d,
        group,
        parent,
        Some(parent),
        &children,
        GroupNeed::Count(2),
        at(1),
    )
    .await;
    assert_eq!(
        (
            joined.id,
            joined.waiter,
            joined.parent,
            joined.size,
            joined.settled,
            joined.need
        ),
        (group, parent, Some(parent), 2, 0, Some(2))
    );
    assert_eq!(joined.done_at, None);

    complete_with(d, children[0], json!({ "n": 1 }), at(5)).await;
    let counted = group_of(d, group).await;
    assert_eq!((counted.settled, counted.done_at), (1, None));
    let row = get(d, parent).await;
    assert_eq!((row.state, row.run_at), (JobState::Suspended, at(3600)));

    bury(d, children[1], at(7)).await;
    let done = group_of(d, group).await;
    assert_eq!((done.settled, done.done_at), (2, Some(at(7))));
    assert!(done.is_done());
    let row = get(d, parent).await;
    assert_eq!(row.state, JobState::Ready);
    assert!(
        row.run_at <= at(7),
        "due at the last settle: {}",
        row.run_at
    );

    let members = d
        .job_group_members(&GroupMembersParams {
            group,
            after: None,
            limit: GROUP_PAGE,
        })
        .await
        .unwrap();
    assert_eq!(members.len(), 2);
    assert_eq!((members[0].position, members[0].id), (0, children[0]));
    assert_eq!(members[0].state, Some(JobState::Done));
    assert_eq!(members[0].result, Some(json!({ "n": 1 })));
    assert_eq!((members[1].position, members[1].id), (1, children[1]));
    assert_eq!(members[1].state, Some(JobState::Dead));
    assert_eq!(
        members[1].last_error_code.as_deref(),
        Some(ErrorCode::Invariant.as_str())
    );
    assert_eq!(members[1].result, None);

    let links = d.job_links(parent).await.unwrap();
    assert_eq!(
        links.children,
        vec![
            (children[0], Some(JobState::Done)),
            (children[1], Some(JobState::Dead))
        ]
    );
    assert_eq!(links.parent, None);
    let of_child = d.job_links(children[1]).await.unwrap();
    assert_eq!(of_child.parent, Some(parent));
    assert_eq!(of_child.batch, None);

    // Counted once: the parent runs and parks again; nothing settles, nothing wakes it.
    claim_and_park(d, parent, at(8), at(9000)).await;
    let again = d
        .job_group_wake(&GroupWakeParams { group, now: at(9) })
        .await
        .unwrap()
        .expect("the group exists");
    assert_eq!(again.settled, 2);
}

/// A join counts members already settled at once, and a replayed join adds nothing; a group
/// done while its waiter still runs does not touch it, and the waiter's `job_group_wake` after
/// it parks makes it due; a wake of a group not done leaves the waiter parked.
pub async fn job_group_join_counts_settled_members_and_the_wake_after_a_park(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let parent = enqueue_key(d, "parent").await;
    let running = claim_one(d, "parent-worker", t0()).await;
    let mut early = request("conformance.child", "early");
    early.run_at = at(1);
    let early = enqueue(d, &early).await.id;
    complete_with(d, early, json!("first"), at(2)).await;
    let mut late = request("conformance.child", "late");
    late.run_at = at(3605);
    let late = enqueue(d, &late).await.id;

    let group = Uuid::now_v7();
    let members = [early, late];
    let joined = join(
        d,
        group,
        parent,
        Some(parent),
        &members,
        GroupNeed::Count(2),
        at(3),
    )
    .await;
    assert_eq!(
        (joined.size, joined.settled),
        (2, 1),
        "the done one counts at its join"
    );
    let replayed = join(
        d,
        group,
        parent,
        Some(parent),
        &members,
        GroupNeed::Count(2),
        at(3),
    )
    .await;
    assert_eq!(
        (replayed.size, replayed.settled),
        (2, 1),
        "a replayed join adds nothing"
    );

    // Not done: a wake after a park leaves the parent parked.
    let mut park = nack_params(parent, &running.by, NackTarget::Park, at(3600), at(4));
    park.counts_as_attempt = false;
    assert!(nack(d, &park).await);
    let woken = d
        .job_group_wake(&GroupWakeParams { group, now: at(4) })
        .await
        .unwrap()
        .expect("the group exists");
    assert!(!woken.is_done());
    assert_eq!(get(d, parent).await.state, JobState::Suspended);

    // The parent runs again (its poll), and meanwhile the last child settles: the parent is
    // running, so the settle leaves it be; its park and wake make it due.
    let again = claim_one(d, "parent-worker", at(3600)).await;
    assert_eq!(again.id, parent);
    complete_with(d, late, json!("second"), at(3610)).await;
    assert!(group_of(d, group).await.is_done());
    assert_eq!(get(d, parent).await.state, JobState::Running);
    let mut park = nack_params(parent, &again.by, NackTarget::Park, at(7200), at(3611));
    park.counts_as_attempt = false;
    assert!(nack(d, &park).await);
    assert_eq!(get(d, parent).await.state, JobState::Suspended);
    d.job_group_wake(&GroupWakeParams {
        group,
        now: at(3612),
    })
    .await
    .unwrap();
    let row = get(d, parent).await;
    assert_eq!(row.state, JobState::Ready);
    assert!(row.run_at <= at(3612));
}

/// A batch (no parent) stays open while members are added and settle; the join that closes it
/// (`All`) makes its blocked callback due once every member has settled; members and the
/// callback link to the batch; members page back in join order.
pub async fn job_group_batch_stays_open_until_closed_and_pages_in_order(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let mut callback = request("conformance.callback", "callback");
    callback.dependencies = None;
    let callback = enqueue(d, &callback).await.id;
    claim_and_park(d, callback, t0(), blocked_until()).await;
    let batch = Uuid::now_v7();
    let mut members = Vec::new();
    for i in 0..5 {
        let mut member = request("conformance.member", &format!("member-{i}"));
        member.run_at = at(1 + i);
        members.push(enqueue(d, &member).await.id);
    }
    let open = join(
        d,
        batch,
        callback,
        None,
        &members[..3],
        GroupNeed::Keep,
        at(1),
    )
    .await;
    assert_eq!(
        (open.size, open.settled, open.need, open.parent),
        (3, 0, None, None)
    );
    for (i, id) in members[..3].iter().enumerate() {
        complete_with(d, *id, json!(i), at(10 + i as i64)).await;
    }
    let added = join(
        d,
        batch,
        callback,
        None,
        &members[3..],
        GroupNeed::Keep,
        at(20),
    )
    .await;
    assert_eq!((added.size, added.settled, added.need), (5, 3, None));
    assert!(!added.is_done(), "open: never done");
    assert_eq!(get(d, callback).await.state, JobState::Suspended);
    for (i, id) in members[3..].iter().enumerate() {
        complete_with(d, *id, json!(3 + i), at(30 + i as i64)).await;
    }
    assert_eq!(get(d, callback).await.state, JobState::Suspended);
    let closed = join(d, batch, callback, None, &[], GroupNeed::All, at(40)).await;
    assert_eq!((closed.size, closed.settled, closed.need), (5, 5, Some(5)));
    assert_eq!(closed.done_at, Some(at(40)));
    let row = get(d, callback).await;
    assert_eq!(row.state, JobState::Ready);

    let mut read = Vec::new();
    let mut after = None;
    loop {
        let page = d
            .job_group_members(&GroupMembersParams {
                group: batch,
                after,
                limit: 2,
            })
            .await
            .unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        after = Some(last.position);
        read.extend(page.iter().map(|m| (m.position, m.id, m.result.clone())));
    }
    let expected: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, id)| (i as u32, *id, Some(json!(i))))
        .collect();
    assert_eq!(read, expected);
    assert_eq!(d.job_links(members[4]).await.unwrap().batch, Some(batch));
    assert_eq!(d.job_links(callback).await.unwrap().batch, Some(batch));
    assert_eq!(d.job_links(members[4]).await.unwrap().parent, None);
}

/// Cancelling a parent cancels its live children and theirs, leaving settled ones as they
/// ended; the cancelled children count in the parent's group, which wakes nothing.
pub async fn job_cancel_takes_the_children_of_a_parent_with_it(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let parent = enqueue_key(d, "parent").await;
    claim_and_park(d, parent, t0(), at(3600)).await;
    let mut kids = Vec::new();
    for (i, key) in ["done", "queued", "running"].iter().enumerate() {
        let mut child = request("conformance.child", key);
        child.run_at = at(1 + i as i64);
        kids.push(enqueue(d, &child).await.id);
    }
    let group = Uuid::now_v7();
    join(
        d,
        group,
        parent,
        Some(parent),
        &kids,
        GroupNeed::Count(3),
        at(1),
    )
    .await;
    complete_with(d, kids[0], json!(0), at(5)).await;
    // The running child has a child of its own, queued.
    let mut grandchild = request("conformance.child", "grandchild");
    grandchild.run_at = at(3000);
    let grandchild = enqueue(d, &grandchild).await.id;
    let running = claim(d, &claim_params("child-worker", 10, at(10))).await;
    assert!(running.jobs.iter().any(|j| j.id == kids[2]));
    let inner = Uuid::now_v7();
    join(
        d,
        inner,
        kids[2],
        Some(kids[2]),
        &[grandchild],
        GroupNeed::Count(1),
        at(10),
    )
    .await;

    let cancelled = d
        .job_cancel(&JobCancelParams {
            reason: None,
            id: parent,
            actor: Some("ops".into()),
            now: at(20),
        })
        .await
        .unwrap();
    assert_eq!(cancelled.state, JobState::Cancelled);
    assert_eq!(
        get(d, kids[0]).await.state,
        JobState::Done,
        "a settled child stays"
    );
    assert_eq!(get(d, kids[1]).await.state, JobState::Cancelled);
    assert_eq!(get(d, kids[2]).await.state, JobState::Cancelled);
    assert_eq!(get(d, grandchild).await.state, JobState::Cancelled);
    let counted = group_of(d, group).await;
    assert_eq!(counted.settled, 3);
    assert_eq!(get(d, parent).await.state, JobState::Cancelled, "no wake");
    claim_none(d, "w1", at(5000)).await;
}

// ---------------------------------------------------------------------------------------------
// Through a worker.

/// A child that keeps its result: answers its key, except `fail` (fails for good,
/// `X_INVARIANT`) and keys starting `stuck` (wait a day for an event nobody publishes).
#[derive(Debug)]
pub struct Child;

impl Job for Child {
    type Input = Subject;
    type Output = String;
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.child");
        d.result = Some(KeptResult::of::<String>("String"));
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("child:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<String, JobError>> {
        Box::pin(async move {
            if input.key == "fail" {
                return Err(JobError::new(
                    ErrorCode::Invariant,
                    "this child always fails",
                ));
            }
            if input.key.starts_with("stuck") {
                run.wait_for_event::<()>("conformance.never", &input.key, "1d")
                    .await?;
            }
            Ok(input.key)
        })
    }
}

impl Invocable for Child {}

/// The queue no worker of these cases serves.
const ELSEWHERE: &str = "conformance.elsewhere";

fn told(outcome: &Result<String, JobError>) -> String {
    match outcome {
        Ok(key) => format!("ok:{key}"),
        Err(e) => format!("err:{}", e.code().map_or("none", |c| c.as_str())),
    }
}

/// Invokes [`Child`] jobs as its key says, and keeps what it got back as text: `one:<k>` one
/// child; `all` three (`a`, `fail`, `c`); `first` the first of `stuck` and `quick`; `late` one
/// child on a queue no worker serves, with a one-minute timeout; `wait:<x>` one child that
/// waits for an event. A step after the invoke runs once, on the resumed attempt.
#[derive(Debug)]
pub struct Parent;

impl Job for Parent {
    type Input = Subject;
    type Output = Vec<String>;
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.parent");
        d.result = Some(KeptResult::of::<Vec<String>>("Vec<String>"));
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("parent:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, input: Subject) -> BoxFuture<'static, Result<Vec<String>, JobError>> {
        Box::pin(async move {
            let key = input.key.as_str();
            let told: Vec<String> = if let Some(child) = key.strip_prefix("one:") {
                vec![told(&run.invoke(Child, subject(child)).await)]
            } else if let Some(x) = key.strip_prefix("wait:") {
                let child = subject(&format!("stuck-{x}"));
                vec![told(&run.invoke(Child, child).await)]
            } else if key == "all" {
                let children = ["a", "fail", "c"].map(subject);
                let all = run.invoke_all(Child, children).await?;
                all.iter().map(told).collect()
            } else if key == "first" {
                let children = ["stuck", "quick"].map(subject);
                let first = run.invoke_all(Child, children).first(1).await?;
                first
                    .iter()
                    .map(|o| o.as_ref().map_or("none".to_string(), told))
                    .collect()
            } else {
                let late = run
                    .invoke(Child, subject("late"))
                    .queue(ELSEWHERE)
                    .timeout("1m")
                    .await;
                vec![told(&late)]
            };
            let summary = told.join(",");
            run.step("after", async move { Ok::<_, JobError>(summary) })
                .await?;
            Ok(told)
        })
    }
}

/// A batch's callback: keeps `size:done:failed:cancelled` of its batch as [`Run::batch`]
/// reads it.
#[derive(Debug)]
pub struct Tally;

impl Job for Tally {
    type Input = Subject;
    type Output = String;
    const DESCRIPTOR: JobDescriptor = {
        let mut d = descriptor("conformance.tally");
        d.result = Some(KeptResult::of::<String>("String"));
        d
    };

    fn idempotency_key(input: &Subject) -> String {
        format!("tally:{}", input.key)
    }

    fn tenant(_: &Subject) -> Option<String> {
        None
    }

    fn run(run: Run, _input: Subject) -> BoxFuture<'static, Result<String, JobError>> {
        Box::pin(async move {
            let batch = run
                .batch()
                .await?
                .ok_or_else(|| JobError::new(ErrorCode::Invariant, "the callback has no batch"))?;
            Ok(format!(
                "{}:{}:{}:{}",
                batch.size,
                batch.done,
                batch.failed.len(),
                batch.cancelled.len()
            ))
        })
    }
}

/// A worker over [`Parent`], [`Child`] and [`Tally`] on [`QUEUE`], on a frozen clock.
fn rig(driver: Arc<dyn JobDriver>) -> (Jobs, TestClock, Worker) {
    let clock = TestClock::at(t0());
    let jobs = Jobs::with_clock(driver, Arc::new(clock.clone()));
    let mut registry = Registry::new();
    registry
        .register::<Parent>()
        .and_then(|r| r.register::<Child>())
        .and_then(|r| r.register::<Tally>())
        .expect("distinct names");
    let worker = jobs
        .worker()
        .registry(registry)
        .queues([QUEUE])
        .build()
        .expect("the worker builds");
    (jobs, clock, worker)
}

/// Worker passes until `id` is done (at most `passes`), answering every execution seen.
async fn run_until_done(
    d: &dyn JobDriver,
    worker: &Worker,
    id: JobId,
    passes: usize,
) -> Vec<JobExecution> {
    let mut seen = Vec::new();
    for _ in 0..passes {
        seen.extend(tick(worker).await);
        if get(d, id).await.state == JobState::Done {
            return seen;
        }
    }
    panic!("job {id} was not done after {passes} passes: {seen:?}");
}

fn runs_of(seen: &[JobExecution], id: JobId) -> Vec<ExecutionOutcome> {
    seen.iter()
        .filter(|e| e.job_id == id)
        .map(|e| e.outcome)
        .collect()
}

async fn kept(d: &dyn JobDriver, id: JobId) -> Value {
    get(d, id).await.result.unwrap_or(Value::Null)
}

async fn children_of(d: &dyn JobDriver, id: JobId) -> Vec<JobId> {
    let links = d.job_links(id).await.unwrap();
    links.children.into_iter().map(|(id, _)| id).collect()
}

/// `run.invoke` parks the parent without spending an attempt and resumes it once with the
/// child's output; `run.invoke_all` resumes it once, when the last child settled, with every
/// outcome in input order, a failed child's as its error code; the step after the invoke runs
/// once; the children are the parent's in its links and carry its tenant.
pub async fn worker_invoke_resumes_the_parent_once_with_every_outcome(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, _clock, worker) = rig(driver.clone());

    let one = jobs
        .enqueue::<Parent>(subject("one:solo"))
        .await
        .unwrap()
        .id;
    let seen = run_until_done(d, &worker, one, 6).await;
    assert_eq!(
        runs_of(&seen, one),
        vec![ExecutionOutcome::Suspended, ExecutionOutcome::Completed]
    );
    assert_eq!(get(d, one).await.attempt, 1, "the park spent no attempt");
    assert_eq!(kept(d, one).await, json!(["ok:solo"]));
    let children = children_of(d, one).await;
    assert_eq!(children.len(), 1);
    assert_eq!(d.job_links(children[0]).await.unwrap().parent, Some(one));
    assert_eq!(get(d, children[0]).await.state, JobState::Done);

    let all = jobs.enqueue::<Parent>(subject("all")).await.unwrap().id;
    let seen = run_until_done(d, &worker, all, 6).await;
    assert_eq!(
        runs_of(&seen, all),
        vec![ExecutionOutcome::Suspended, ExecutionOutcome::Completed],
        "woken once, by the last child"
    );
    assert_eq!(
        kept(d, all).await,
        json!(["ok:a", "err:X_INVARIANT", "ok:c"])
    );
    assert_eq!(children_of(d, all).await.len(), 3);
    let run_id = get(d, all).await.run_id;
    let steps = d.step_list(&StepListParams { run_id }).await.unwrap();
    let names: Vec<_> = steps.iter().map(|s| (s.name.as_str(), s.status)).collect();
    assert!(
        names.contains(&("invoke:conformance.child", StepStatus::Completed)),
        "{names:?}"
    );
    assert!(
        names.contains(&("after", StepStatus::Completed)),
        "{names:?}"
    );
}

/// `first(1)` resumes the parent when one child settled, with `None` for the other, which is
/// cancelled; a timeout resumes it with `X_JOB_TIMEOUT` and cancels the child; cancelling a
/// child resumes its parent with `X_JOB_CANCELLED`; cancelling a parked parent cancels its
/// child.
pub async fn worker_invoke_first_timeout_and_cancel_both_ways(driver: Arc<dyn JobDriver>) {
    let d = &*driver;
    let (jobs, clock, worker) = rig(driver.clone());

    let first = jobs.enqueue::<Parent>(subject("first")).await.unwrap().id;
    let seen = run_until_done(d, &worker, first, 6).await;
    assert_eq!(
        runs_of(&seen, first),
        vec![ExecutionOutcome::Suspended, ExecutionOutcome::Completed]
    );
    assert_eq!(kept(d, first).await, json!(["none", "ok:quick"]));
    let stuck = children_of(d, first).await[0];
    assert_eq!(
        get(d, stuck).await.state,
        JobState::Cancelled,
        "past the first n"
    );

    // The timeout: the child sits on a queue no worker serves. The parent polls its group
    // (the job's event poll, 30 s) until the deadline.
    let late = jobs.enqueue::<Parent>(subject("late")).await.unwrap().id;
    assert_eq!(
        runs_of(&tick(&worker).await, late),
        vec![ExecutionOutcome::Suspended]
    );
    assert_eq!(get(d, late).await.run_at, at(30));
    clock.advance(Duration::from_secs(30));
    assert_eq!(
        runs_of(&tick(&worker).await, late),
        vec![ExecutionOutcome::Suspended]
    );
    assert_eq!(
        get(d, late).await.run_at,
        at(60),
        "parked until the deadline"
    );
    clock.advance(Duration::from_secs(30));
    let seen = run_until_done(d, &worker, late, 3).await;
    assert_eq!(runs_of(&seen, late), vec![ExecutionOutcome::Completed]);
    assert_eq!(kept(d, late).await, json!(["err:X_JOB_TIMEOUT"]));
    let child = children_of(d, late).await[0];
    assert_eq!(
        get(d, child).await.state,
        JobState::Cancelled,
        "cancelled past the timeout"
    );

    // Cancelling the child resumes its parent with X_JOB_CANCELLED.
    let now = crate::clock::Clock::now(&clock);
    let parent = jobs.enqueue::<Parent>(subject("wait:x")).await.unwrap().id;
    tick(&worker).await;
    tick(&worker).await;
    let child = children_of(d, parent).await[0];
    assert_eq!(
        get(d, child).await.state,
        JobState::Suspended,
        "waiting for its event"
    );
    let cancel = |id| JobCancelParams {
        reason: None,
        id,
        actor: Some("ops".into()),
        now,
    };
    d.job_cancel(&cancel(child)).await.unwrap();
    run_until_done(d, &worker, parent, 3).await;
    assert_eq!(kept(d, parent).await, json!(["err:X_JOB_CANCELLED"]));

    // Cancelling a parked parent cancels its child.
    let parent = jobs.enqueue::<Parent>(subject("wait:y")).await.unwrap().id;
    tick(&worker).await;
    tick(&worker).await;
    let child = children_of(d, parent).await[0];
    assert_eq!(get(d, parent).await.state, JobState::Suspended);
    d.job_cancel(&cancel(parent)).await.unwrap();
    assert_eq!(get(d, child).await.state, JobState::Cancelled);
    assert!(tick(&worker).await.is_empty(), "nothing left to run");
}

/// A batch's callback waits while the batch is open, however many members settled; once it
/// is closed and every member has settled it runs once and reads the counts and the failed
/// members; members and callback link to the batch.
pub async fn worker_batch_callback_runs_once_after_the_closed_batch_settled(
    driver: Arc<dyn JobDriver>,
) {
    let d = &*driver;
    let (jobs, _clock, worker) = rig(driver.clone());
    let batch = jobs.batch::<Tally>(subject("month")).await.unwrap();
    let callback = batch.callback();
    let first = batch
        .add::<Child, _>(["b1", "fail", "b3"].map(subject))
        .await
        .unwrap();
    assert_eq!(first.len(), 3);
    tick(&worker).await;
    tick(&worker).await;
    let report = batch.report().await.unwrap();
    assert_eq!((report.size, report.settled, report.closed), (3, 3, false));
    assert_eq!(report.failed, vec![first[1].id]);
    assert_eq!(
        get(d, callback).await.state,
        JobState::Delayed,
        "open: it waits"
    );
    assert!(runs_of(&tick(&worker).await, callback).is_empty());

    let later = jobs.open_batch(batch.id()).await.unwrap();
    let added = later.add::<Child, _>([subject("b4")]).await.unwrap();
    let closed = later.close().await.unwrap();
    assert_eq!((closed.size, closed.closed), (4, true));
    let refused = batch.add::<Child, _>([subject("b5")]).await.unwrap_err();
    assert_eq!(refused.code(), Some(ErrorCode::Invariant));
    assert_eq!(
        d.job_links(added[0].id).await.unwrap().batch,
        Some(batch.id())
    );
    assert_eq!(d.job_links(callback).await.unwrap().batch, Some(batch.id()));

    let seen = run_until_done(d, &worker, callback, 4).await;
    assert_eq!(runs_of(&seen, callback), vec![ExecutionOutcome::Completed]);
    assert_eq!(kept(d, callback).await, json!("4:3:1:0"));
    let report = jobs.batch_report(batch.id()).await.unwrap();
    assert_eq!((report.size, report.settled, report.done), (4, 4, 3));
    assert_eq!(report.states.get("done"), Some(&3));
    assert_eq!(report.states.get("dead"), Some(&1));
}
