//! The Redis driver: every port on one Redis server or a Redis Cluster (feature `redis`).
//!
//! Every change to more than one key is one Lua script, atomic on the server, and every script
//! touches one hash slot: a queue's keys share the queue's tag (`keys.rs`), so a queue lives on
//! one master and queues spread over a cluster's masters. What spans queues (the operator's
//! lists, the counts, the purge) walks the queues one script each. A job id finds its queue
//! through a sharded index written with the job (on a cluster, before it;
//! `keys::Keys::id_index`), and through this process' own memory of the jobs it enqueued and
//! claimed. `ARCHITECTURE.md` says how each
//! guarantee is kept; the guide `docs/redis.md` what survives what.
//!
//! ```no_run
//! # async fn demo() -> Result<(), jobs::JobError> {
//! use jobs::{driver::RedisDriver, Jobs};
//!
//! let driver = RedisDriver::connect("redis://127.0.0.1:6379/?require_durability=everysec").await?;
//! let jobs = Jobs::new(driver);
//! # Ok(()) }
//! ```

mod backfill;
mod caller_tx;
mod claim;
mod codec;
mod conn;
mod connect;
mod dependencies;
mod enqueue;
mod events;
mod groups;
mod introspect;
mod keys;
mod lease;
mod ledger_book;
mod purge;
mod reads;
mod scheduler;
mod scripts;
mod settle;
mod steps;
mod wake;
mod webhook_ledger;

pub use connect::{
    Durability, RedisOptions, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PREFIX, DEFAULT_RESPONSE_TIMEOUT,
};
pub use keys::key_slot;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use rustc_hash::FxHashMap as HashMap;

use self::conn::Conn;
use self::keys::Keys;
use super::records::*;
use super::{JobDriver, WakeReceiver};
use crate::driver::{
    EventFindParams, JobCancelParams, JobGetParams, Operation as Op, QueueStatsParams,
    StepListParams, StepPutParams,
};
use crate::error::{ErrorCode, JobError};

/// How many job ids this process remembers the queue of before it starts over.
const REMEMBERED_JOBS: usize = 100_000;

/// The Redis [`JobDriver`]. Cloning is cheap and shares the connection.
#[derive(Debug, Clone)]
pub struct RedisDriver {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    conn: Conn,
    keys: Keys,
    options: RedisOptions,
    /// The queue of each job this process enqueued or claimed, so its settle needs no lookup.
    queue_of: Mutex<HashMap<JobId, Arc<str>>>,
    /// The queues this process knows are filed in the queue set.
    known_queues: Mutex<HashSet<String>>,
    /// The largest value the server takes (`proto-max-bulk-len`), read at connect.
    largest_value: usize,
}

impl RedisDriver {
    /// Connects to the server or cluster `url` names (see [`RedisOptions::from_url`]): a
    /// closed port fails at once and a silent one at the connect timeout
    /// (`X_DRIVER_UNAVAILABLE`), a refused password is `X_DRIVER_AUTH_FAILED`, a server keeping
    /// less than `require_durability` asks is `X_DRIVER_DURABILITY_INSUFFICIENT`.
    pub async fn connect(url: &str) -> Result<Self, JobError> {
        Self::connect_with(RedisOptions::from_url(url)?).await
    }

    /// [`RedisDriver::connect`] with options of your own.
    pub async fn connect_with(options: RedisOptions) -> Result<Self, JobError> {
        let conn = connect::connect(&options).await?;
        let largest_value = connect::largest_value(&conn).await?;
        Ok(RedisDriver {
            inner: Arc::new(Inner {
                conn,
                keys: Keys::new(&options.prefix),
                options,
                queue_of: Mutex::new(HashMap::default()),
                known_queues: Mutex::new(HashSet::new()),
                largest_value,
            }),
        })
    }

    /// The options the driver was opened with.
    pub fn options(&self) -> &RedisOptions {
        &self.inner.options
    }

    /// Whether the driver talks to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.inner.conn, Conn::Cluster(_))
    }

    /// What the server keeps of an acknowledged write, read now (every master of a cluster;
    /// the weakest answers).
    pub async fn durability(&self) -> Result<Durability, JobError> {
        connect::persistence(&self.inner.conn).await
    }

    fn conn(&self) -> &Conn {
        &self.inner.conn
    }

    fn keys(&self) -> &Keys {
        &self.inner.keys
    }

    /// Remembers the queue of a job this process handled.
    fn remember(&self, id: JobId, queue: &Arc<str>) {
        let mut map = self.inner.queue_of.lock().expect("queue map poisoned");
        if map.len() >= REMEMBERED_JOBS {
            map.clear();
        }
        map.insert(id, queue.clone());
    }

    fn forget(&self, id: &JobId) {
        self.inner
            .queue_of
            .lock()
            .expect("queue map poisoned")
            .remove(id);
    }

    /// The queue job `id` lives in: this process' memory, else the id index. `None`: no such
    /// job was ever enqueued (or it was purged).
    async fn queue_of(&self, op: Op, id: &JobId) -> Result<Option<Arc<str>>, JobError> {
        if let Some(queue) = self
            .inner
            .queue_of
            .lock()
            .expect("queue map poisoned")
            .get(id)
        {
            return Ok(Some(queue.clone()));
        }
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.keys().id_index(id)).arg(id.to_string());
        let queue: Option<String> = self.conn().query(op, &cmd).await?;
        Ok(queue.map(Arc::from))
    }

    /// Files queues in the queue set (once per process).
    async fn file_queues<'a>(
        &self,
        op: Op,
        queues: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), JobError> {
        let new: Vec<&str> = {
            let known = self.inner.known_queues.lock().expect("queue set poisoned");
            let mut new: Vec<&str> = queues.into_iter().filter(|q| !known.contains(*q)).collect();
            new.sort_unstable();
            new.dedup();
            new
        };
        if new.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("SADD");
        cmd.arg(self.keys().queues()).arg(&new);
        self.conn().query::<()>(op, &cmd).await?;
        let mut known = self.inner.known_queues.lock().expect("queue set poisoned");
        known.extend(new.into_iter().map(String::from));
        Ok(())
    }

    /// Every queue ever enqueued to.
    async fn queues(&self, op: Op) -> Result<Vec<String>, JobError> {
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(self.keys().queues());
        let mut queues: Vec<String> = self.conn().query(op, &cmd).await?;
        queues.sort_unstable();
        Ok(queues)
    }

    /// Refuses a value the server would refuse (over its `proto-max-bulk-len`) before anything
    /// is written: the server would answer with a protocol error and drop the connection.
    fn check_value(&self, what: impl std::fmt::Display, len: usize) -> Result<(), JobError> {
        if len <= self.inner.largest_value {
            return Ok(());
        }
        Err(JobError::new(
            ErrorCode::LimitExceeded,
            format!(
                "{what} is {len} bytes, over the {} bytes the Redis server takes in one value",
                self.inner.largest_value
            ),
        )
        .with_fix(
            "keep large payloads outside the queue (an object store) and pass their reference, \
             or raise the server's `proto-max-bulk-len`",
        ))
    }

    /// The refusal of an operation on a job no queue holds.
    fn unknown_job(code: ErrorCode, id: &JobId) -> JobError {
        JobError::new(code, format!("no job with id {id}"))
    }
}

#[async_trait]
impl JobDriver for RedisDriver {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn store_check(&self) -> Result<crate::driver::StoreCheck, JobError> {
        let kept = connect::persistence(self.conn()).await?;
        let weakness = match kept {
            connect::Durability::None => Some(
                "the server keeps no append-only file synced (appendonly no, or appendfsync no): a crash or restart loses acknowledged jobs".to_string(),
            ),
            connect::Durability::EverySec => Some(
                "appendfsync everysec: a crash of the server loses up to about a second of acknowledged jobs".to_string(),
            ),
            connect::Durability::Always => None,
        };
        Ok(crate::driver::StoreCheck {
            pending_migrations: Vec::new(),
            settings: vec![("durability".into(), kept.as_str().into())],
            weakness,
        })
    }

    fn caller_transaction(&self) -> Option<&dyn crate::driver::CallerTransaction> {
        Some(self)
    }

    fn introspect(&self) -> Option<&dyn crate::driver::introspect::JobIntrospection> {
        Some(self)
    }

    fn lease_store(&self) -> Option<&dyn crate::driver::lease::LeaseStore> {
        Some(self)
    }

    fn scheduler_store(&self) -> Option<&dyn crate::driver::SchedulerStore> {
        Some(self)
    }

    fn backfill_store(&self) -> Option<&dyn crate::driver::BackfillStore> {
        Some(self)
    }

    fn ledger_book(&self) -> Option<&dyn crate::driver::LedgerBook> {
        Some(self)
    }

    fn webhook_ledger(&self) -> Option<&dyn crate::driver::WebhookLedger> {
        Some(self)
    }

    async fn job_enqueue(&self, request: &EnqueueRequest) -> Result<EnqueueResult, JobError> {
        if let Some(dependencies) = &request.dependencies {
            return dependencies::enqueue_dependent(self, request, dependencies).await;
        }
        let mut out = enqueue::enqueue(self, std::slice::from_ref(request), request.now).await?;
        Ok(out.remove(0))
    }

    async fn job_enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        check_batch_without_dependencies(requests)?;
        let Some(now) = requests.iter().map(|r| r.now).max() else {
            return Ok(Vec::new());
        };
        enqueue::enqueue(self, requests, now).await
    }

    async fn job_claim(&self, params: &ClaimParams) -> Result<ClaimResult, JobError> {
        let result = claim::claim(self, params).await;
        // A burial ends a job: its dependents, if any, follow it (burials are rare).
        if let Ok(claimed) = &result {
            if !claimed.exhausted.is_empty() {
                let queues = claimed
                    .exhausted
                    .iter()
                    .map(|j| std::sync::Arc::from(j.queue.as_str()))
                    .collect();
                dependencies::release_after(self, queues, params.now).await;
            }
        }
        result
    }

    async fn job_ack(&self, params: &AckParams) -> Result<bool, JobError> {
        Ok(settle::ack_many(self, std::slice::from_ref(params)).await?[0])
    }

    async fn job_ack_many(&self, params: &[AckParams]) -> Result<Vec<bool>, JobError> {
        settle::ack_many(self, params).await
    }

    async fn job_nack(&self, params: &NackParams) -> Result<bool, JobError> {
        settle::nack(self, params).await
    }

    async fn job_purge(&self, params: &JobPurgeParams) -> Result<u64, JobError> {
        purge::purge(self, params).await
    }

    async fn job_heartbeat(&self, params: &HeartbeatParams) -> Result<bool, JobError> {
        settle::heartbeat(self, params).await
    }

    async fn job_progress(&self, params: &ProgressParams) -> Result<bool, JobError> {
        settle::progress(self, params).await
    }

    async fn job_get(&self, params: &JobGetParams) -> Result<Option<JobRecord>, JobError> {
        reads::get(self, &params.id).await
    }

    async fn job_links(&self, id: JobId) -> Result<JobLinks, JobError> {
        dependencies::links(self, id).await
    }

    async fn job_release_pending(&self, now: crate::clock::Timestamp) -> Result<(), JobError> {
        let queues = dependencies::every_queue(self).await;
        dependencies::release_pending(self, queues, now).await
    }

    async fn job_cancel(&self, params: &JobCancelParams) -> Result<JobRecord, JobError> {
        settle::cancel(self, params).await
    }

    async fn job_group_join(&self, params: &GroupJoinParams<'_>) -> Result<GroupRecord, JobError> {
        groups::join(self, params).await
    }

    async fn job_group_get(&self, group: GroupId) -> Result<Option<GroupRecord>, JobError> {
        groups::get(self, group).await
    }

    async fn job_group_members(
        &self,
        params: &GroupMembersParams,
    ) -> Result<Vec<GroupMember>, JobError> {
        groups::members(self, params).await
    }

    async fn job_group_wake(
        &self,
        params: &GroupWakeParams,
    ) -> Result<Option<GroupRecord>, JobError> {
        groups::wake(self, params).await
    }

    async fn queue_stats(&self, params: &QueueStatsParams) -> Result<Vec<QueueStats>, JobError> {
        reads::queue_stats(self, params.now).await
    }

    async fn queue_next_due(&self, params: &NextDueParams) -> Result<Vec<QueueDue>, JobError> {
        reads::next_due(self, params).await
    }

    async fn step_list(&self, params: &StepListParams) -> Result<Vec<StepRecord>, JobError> {
        steps::list(self, params.run_id).await
    }

    async fn step_put(&self, params: &StepPutParams<'_>) -> Result<bool, JobError> {
        steps::put(self, params).await
    }

    async fn event_publish(&self, event: &EventPublish) -> Result<EventId, JobError> {
        events::publish(self, event).await
    }

    async fn event_purge(&self, params: &EventPurgeParams) -> Result<u64, JobError> {
        events::purge(self, params).await
    }

    async fn event_mark(&self) -> Result<String, JobError> {
        events::mark(self).await
    }

    async fn event_find(&self, params: &EventFindParams<'_>) -> Result<Option<JobEvent>, JobError> {
        events::find(self, params).await
    }

    async fn wake_listen(&self) -> Result<Option<WakeReceiver>, JobError> {
        let nodes = self.inner.options.nodes.clone();
        wake::listen(nodes, self.keys().wake_channel())
            .await
            .map(Some)
    }
}
