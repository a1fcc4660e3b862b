//! The scheduler store (`lua/scheduler.lua`) in one slot of its own, `{<prefix>:sched}`: the
//! leader lease, each task's watermark and last fire, the pauses, and the fires in flight.
//!
//! # How `task_fire` stays exact without one transaction
//!
//! The SQL stores move a task's watermark and insert the occurrence's jobs in one transaction.
//! Here the watermark lives in the scheduler's slot and each job in its queue's, so no script
//! can do both. Inserting the jobs first and moving the watermark after would not do: a fire's
//! ids are fresh on every attempt and its keys dedupe only while a job is live, so a crash
//! between the two would fire the occurrence again once its first jobs had finished, and a
//! scheduler that lost the race would have inserted jobs for a fire that did not happen.
//!
//! So the watermark moves first, with the fire written ahead beside it:
//!
//! 1. one script compares the watermark with the one the scheduler read and, only if it still
//!    is that, moves it, records the last fire, and files the occurrence's jobs (their ids
//!    included) as the task's *pending* fire under a fresh token. Of two racing schedulers one
//!    moves it; the other writes nothing and inserts nothing, as on SQL;
//! 2. the jobs go in through the driver's own enqueue (`enqueue.rs`), keyed by the ids filed;
//! 3. a script drops the pending fire, if it still is the token's.
//!
//! A crash or a lost connection between 1 and 3 leaves the pending fire, and the next
//! `task_fire` of the task or `task_watermarks` (what a newly promoted leader reads first)
//! finishes it: it enqueues the same requests with the same ids, so a job already stored is
//! answered as it is (never inserted twice, finished or not) and a missing one is inserted.
//! While a task's fire is pending no other fire of it moves the watermark. If the enqueue is
//! refused for good (a terminal code: the SQL transaction would roll back), the fire is
//! undone: the watermark and the last fire go back to what the move replaced, and the enqueue
//! has taken back whatever it inserted. The one gap is the enqueue's own: a fire over several
//! queues is one script per queue, as any batch on this driver.
//!
//! A fired job is stored as the SQL stores insert it: due at the fire's `now`, and a live key
//! is answered `deduped` whatever the request's conflict policy.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::codec::{micros, time};
use super::enqueue::{self, malformed};
use super::scripts;
use super::RedisDriver;
use crate::clock::{add, Timestamp};
use crate::driver::records::*;
use crate::driver::scheduler_store::*;
use crate::driver::Operation as Op;
use crate::error::{ErrorClass, ErrorCode, JobError};

/// The length of a pending fire's token (a UUID's text), which its entry starts with.
const TOKEN_LEN: usize = 36;

/// A fire's jobs as the pending entry keeps them, until they are stored.
#[derive(Debug, Serialize, Deserialize)]
struct Pending {
    /// The fire's now, in microseconds: the jobs' creation and due time.
    now: i64,
    jobs: Vec<PendingJob>,
}

#[derive(Debug, Serialize, Deserialize)]
struct PendingJob {
    id: JobId,
    run: RunId,
    name: String,
    queue: String,
    input: serde_json::Value,
    key: String,
    tenant: Option<String>,
    max: u32,
    tp: Option<String>,
    actor: Option<String>,
    /// Absent from a fire filed before priorities: the default.
    #[serde(default)]
    prio: i16,
    /// The unique period in milliseconds; absent: none (and from a fire filed before periods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uq: Option<u64>,
}

impl Pending {
    fn of(jobs: &[EnqueueRequest], now: Timestamp) -> Pending {
        Pending {
            now: now.timestamp_micros(),
            jobs: jobs
                .iter()
                .map(|r| PendingJob {
                    id: r.id,
                    run: r.run_id,
                    name: r.name.clone(),
                    queue: r.queue.clone(),
                    input: r.input.clone(),
                    key: r.idempotency_key.clone(),
                    tenant: r.tenant_id.clone(),
                    max: r.max_attempts,
                    tp: r.traceparent.clone(),
                    actor: r.actor.clone(),
                    prio: r.priority,
                    uq: r
                        .unique_for
                        .map(|p| u64::try_from(p.as_millis()).unwrap_or(u64::MAX)),
                })
                .collect(),
        }
    }

    /// The requests to enqueue, and the now to enqueue them at.
    fn requests(self) -> Result<(Vec<EnqueueRequest>, Timestamp), JobError> {
        let now = chrono::DateTime::from_timestamp_micros(self.now).ok_or_else(malformed)?;
        let requests = self
            .jobs
            .into_iter()
            .map(|j| EnqueueRequest {
                id: j.id,
                run_id: j.run,
                name: j.name,
                queue: j.queue,
                input: j.input,
                idempotency_key: j.key,
                tenant_id: j.tenant,
                max_attempts: j.max,
                run_at: now,
                priority: j.prio,
                on_conflict: ConflictPolicy::Dedupe,
                traceparent: j.tp,
                actor: j.actor,
                unique_for: j.uq.map(std::time::Duration::from_millis),
                dependencies: None,
                now,
            })
            .collect();
        Ok((requests, now))
    }
}

impl RedisDriver {
    fn sched(&self) -> String {
        self.keys().area("sched")
    }

    fn sched_key(&self, name: &str) -> String {
        format!("{}:{name}", self.sched())
    }

    /// Runs one verb of `scheduler.lua` answering 1 or 0.
    async fn sched_script(&self, op: Op, verb: &str, args: &[&str]) -> Result<bool, JobError> {
        let mut invocation = scripts::SCHEDULER.key(self.sched());
        invocation.arg(verb);
        for arg in args {
            invocation.arg(*arg);
        }
        Ok(self.conn().script::<i64>(op, &invocation).await? == 1)
    }

    /// Stores a moved fire's jobs, then drops its pending entry; a terminal refusal undoes the
    /// move, anything else leaves the entry for the next reader to finish.
    async fn store_fire(
        &self,
        op: Op,
        task: &str,
        token: &str,
        requests: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<Vec<EnqueueResult>, JobError> {
        match enqueue::enqueue(self, requests, now).await {
            Ok(results) => {
                self.sched_script(op, "done", &[task, token]).await?;
                Ok(results)
            }
            Err(error) if error.class() == ErrorClass::Terminal => {
                self.sched_script(op, "undo", &[task, token]).await?;
                Err(error)
            }
            Err(error) => Err(error),
        }
    }

    /// Finishes the pending fires (of `task`, or of every task): see the module docs.
    async fn finish_pending(&self, op: Op, task: Option<&str>) -> Result<(), JobError> {
        let pending: HashMap<String, String> = match task {
            Some(task) => {
                let mut cmd = redis::cmd("HGET");
                cmd.arg(self.sched_key("pending")).arg(task);
                let entry: Option<String> = self.conn().query(op, &cmd).await?;
                entry
                    .map(|entry| (task.to_string(), entry))
                    .into_iter()
                    .collect()
            }
            None => {
                let mut cmd = redis::cmd("HGETALL");
                cmd.arg(self.sched_key("pending"));
                self.conn().query(op, &cmd).await?
            }
        };
        for (task, entry) in pending {
            if entry.len() < TOKEN_LEN || !entry.is_char_boundary(TOKEN_LEN) {
                return Err(malformed());
            }
            let (token, json) = entry.split_at(TOKEN_LEN);
            let stored: Pending = serde_json::from_str(json).map_err(|_| {
                JobError::new(
                    ErrorCode::Driver,
                    format!("redis {op}: a pending fire did not decode"),
                )
            })?;
            let (requests, now) = stored.requests()?;
            match self.store_fire(op, &task, token, &requests, now).await {
                Ok(_) => {}
                // Undone: the task fires again from its restored watermark.
                Err(error) if error.class() == ErrorClass::Terminal => {
                    tracing::warn!(
                        code = ?error.code(),
                        "a pending task fire was refused for good and undone"
                    );
                }
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }
}

#[async_trait]
impl SchedulerStore for RedisDriver {
    async fn scheduler_lead(&self, p: &SchedulerLeadParams) -> Result<bool, JobError> {
        let (now, expires) = (micros(p.now), micros(add(p.now, p.ttl)));
        self.sched_script(Op::SchedulerLead, "lead", &[&p.holder, &now, &expires])
            .await
    }

    async fn scheduler_resign(&self, p: &SchedulerResignParams) -> Result<(), JobError> {
        self.sched_script(Op::SchedulerResign, "resign", &[&p.holder])
            .await?;
        Ok(())
    }

    async fn scheduler_leader(
        &self,
        p: &SchedulerLeaderParams,
    ) -> Result<Option<SchedulerLeader>, JobError> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.sched_key("leader"))
            .arg("holder")
            .arg("since")
            .arg("expires");
        let row: (Option<String>, Option<String>, Option<String>) =
            self.conn().query(Op::SchedulerLeader, &cmd).await?;
        let (Some(holder), Some(since), Some(expires)) = row else {
            return Ok(None);
        };
        let leader = SchedulerLeader {
            holder,
            since: time(&since)?,
            expires_at: time(&expires)?,
        };
        Ok((leader.expires_at > p.now).then_some(leader))
    }

    async fn task_watermarks(
        &self,
        _p: &TaskWatermarksParams,
    ) -> Result<Vec<TaskWatermark>, JobError> {
        // A leader reads these first: a fire a crash left pending is stored before it plans.
        self.finish_pending(Op::TaskWatermarks, None).await?;
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.sched_key("wm"));
        let stored: HashMap<String, String> = self.conn().query(Op::TaskWatermarks, &cmd).await?;
        let mut marks = stored
            .into_iter()
            .map(|(task, watermark)| {
                Ok(TaskWatermark {
                    task,
                    watermark: time(&watermark)?,
                })
            })
            .collect::<Result<Vec<_>, JobError>>()?;
        marks.sort_by(|a, b| a.task.cmp(&b.task));
        Ok(marks)
    }

    async fn task_fire(&self, p: &TaskFireParams) -> Result<TaskFireResult, JobError> {
        self.finish_pending(Op::TaskFire, Some(&p.task)).await?;
        let token = uuid::Uuid::now_v7().to_string();
        let jobs = if p.jobs.is_empty() {
            String::new()
        } else {
            serde_json::to_string(&Pending::of(&p.jobs, p.now))
                .map_err(|_| JobError::new(ErrorCode::Driver, "a task fire did not serialize"))?
        };
        let (expected, watermark, now) = (
            p.expected.map(micros).unwrap_or_default(),
            micros(p.watermark),
            micros(p.now),
        );
        let occurrence = p.occurrence.map(micros).unwrap_or_default();
        let moved = self
            .sched_script(
                Op::TaskFire,
                "fire",
                &[
                    &p.task,
                    &expected,
                    &watermark,
                    &occurrence,
                    &now,
                    &token,
                    &jobs,
                ],
            )
            .await?;
        if !moved {
            return Ok(TaskFireResult::default());
        }
        if p.jobs.is_empty() {
            return Ok(TaskFireResult {
                fired: true,
                jobs: Vec::new(),
            });
        }
        // The requests exactly as a finishing reader would rebuild them from the entry.
        let (requests, now) = Pending::of(&p.jobs, p.now).requests()?;
        let jobs = self
            .store_fire(Op::TaskFire, &p.task, &token, &requests, now)
            .await?;
        Ok(TaskFireResult { fired: true, jobs })
    }

    async fn task_pause(&self, p: &TaskPauseParams) -> Result<(), JobError> {
        let mut cmd = redis::cmd("HSETNX");
        cmd.arg(self.sched_key("paused"))
            .arg(&p.task)
            .arg(micros(p.now));
        self.conn().query::<i64>(Op::TaskPause, &cmd).await?;
        Ok(())
    }

    async fn task_resume(&self, p: &TaskResumeParams) -> Result<bool, JobError> {
        let mut cmd = redis::cmd("HDEL");
        cmd.arg(self.sched_key("paused")).arg(&p.task);
        Ok(self.conn().query::<i64>(Op::TaskResume, &cmd).await? == 1)
    }

    async fn task_paused(&self, p: &TaskPausedParams) -> Result<Vec<String>, JobError> {
        if let Some(task) = &p.task {
            let mut cmd = redis::cmd("HEXISTS");
            cmd.arg(self.sched_key("paused")).arg(task);
            let paused: i64 = self.conn().query(Op::TaskPaused, &cmd).await?;
            return Ok(if paused == 1 {
                vec![task.clone()]
            } else {
                Vec::new()
            });
        }
        let mut cmd = redis::cmd("HKEYS");
        cmd.arg(self.sched_key("paused"));
        let mut tasks: Vec<String> = self.conn().query(Op::TaskPaused, &cmd).await?;
        tasks.sort_unstable();
        Ok(tasks)
    }

    async fn task_fires(&self, _p: &TaskFiresParams) -> Result<Vec<TaskFire>, JobError> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.sched_key("fires"));
        let stored: HashMap<String, String> = self.conn().query(Op::TaskFires, &cmd).await?;
        let mut fires = stored
            .into_iter()
            .map(|(task, fire)| {
                let (occurrence, fired_at) = fire.split_once(':').ok_or_else(malformed)?;
                Ok(TaskFire {
                    task,
                    occurrence: time(occurrence)?,
                    fired_at: time(fired_at)?,
                })
            })
            .collect::<Result<Vec<_>, JobError>>()?;
        fires.sort_by(|a, b| a.task.cmp(&b.task));
        fires.truncate(MAX_TASK_FIRES);
        Ok(fires)
    }
}
