//! The outbox in process memory, for tests: a [`MemoryOutboxTx`] stands for the caller's
//! transaction, its staged rows join the outbox when it commits and vanish when it is rolled
//! back or dropped. The lease, claim, fence and purge rules are the SQL stores'.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::mpsc;

use crate::clock::Timestamp;
use crate::driver::caller_tx::{foreign_connection, CallerConn, CallerConnection};
use crate::driver::outbox::*;
use crate::driver::records::{EnqueueRequest, JobId};
use crate::driver::{WakeReceiver, WakeSignal};
use crate::error::JobError;

/// The in-memory [`OutboxStore`].
///
/// ```
/// use jobs::driver::MemoryOutbox;
///
/// let outbox = MemoryOutbox::new();
/// let mut tx = outbox.begin();
/// // jobs.with_outbox(outbox.clone(), ..).enqueue_in::<MyJob>(&mut tx, input).await?;
/// tx.commit(); // the staged rows join the outbox; dropping `tx` instead discards them
/// ```
#[derive(Debug, Clone, Default)]
pub struct MemoryOutbox {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    rows: Mutex<Rows>,
    wakes: Mutex<Vec<mpsc::Sender<WakeSignal>>>,
}

#[derive(Debug, Default)]
struct Rows {
    /// Rows not yet published nor refused, in claim order.
    pending: BTreeMap<(Timestamp, JobId), Pending>,
    /// Published and refused rows: when each was settled, and whether it was refused.
    settled: HashMap<JobId, (Timestamp, bool)>,
    /// The relay's lease on the head: who holds it and since when.
    lease: Option<(String, Timestamp)>,
}

#[derive(Debug)]
struct Pending {
    request: EnqueueRequest,
    publish_attempts: u32,
    last_error_code: Option<(Timestamp, String)>,
}

/// The caller's transaction on a [`MemoryOutbox`]: rows staged through it join the outbox on
/// [`MemoryOutboxTx::commit`], and are discarded when it is rolled back or dropped.
#[derive(Debug)]
pub struct MemoryOutboxTx {
    shared: Arc<Shared>,
    staged: Vec<EnqueueRequest>,
}

impl MemoryOutbox {
    /// An empty outbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// Opens a transaction to stage rows in.
    pub fn begin(&self) -> MemoryOutboxTx {
        MemoryOutboxTx {
            shared: self.shared.clone(),
            staged: Vec::new(),
        }
    }
}

impl MemoryOutboxTx {
    /// Rows staged in this transaction so far.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }

    /// Commits: the staged rows join the outbox, and a relay waiting on the wake is woken.
    pub fn commit(mut self) {
        let staged = std::mem::take(&mut self.staged);
        if staged.is_empty() {
            return;
        }
        {
            let mut rows = self.shared.rows.lock().expect("outbox lock");
            for request in staged {
                let key = (request.now, request.id);
                rows.pending.insert(
                    key,
                    Pending {
                        request,
                        publish_attempts: 0,
                        last_error_code: None,
                    },
                );
            }
        }
        let mut wakes = self.shared.wakes.lock().expect("outbox wakes");
        wakes.retain(|tx| !tx.is_closed());
        for tx in wakes.iter() {
            let _ = tx.try_send(WakeSignal::Queue(String::new()));
        }
    }

    /// Rolls back: the staged rows are discarded (as dropping the transaction does).
    pub fn rollback(self) {}
}

impl CallerConnection for MemoryOutboxTx {
    fn connection(&mut self) -> CallerConn<'_> {
        self
    }
}

impl Rows {
    /// The pending rows of `ids`, when the holder holds the lease (every mark's fence).
    fn held<'a>(
        &'a mut self,
        holder: &str,
        ids: &'a [JobId],
    ) -> impl Iterator<Item = ((Timestamp, JobId), &'a mut Pending)> + 'a {
        let holds = self.lease.as_ref().is_some_and(|(by, _)| by == holder);
        let ids: std::collections::HashSet<JobId> = ids.iter().copied().collect();
        self.pending
            .iter_mut()
            .filter(move |(key, _)| holds && ids.contains(&key.1))
            .map(|(key, row)| (*key, row))
    }
}

#[async_trait]
impl OutboxStore for MemoryOutbox {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn outbox_stage(
        &self,
        conn: CallerConn<'_>,
        request: &EnqueueRequest,
    ) -> Result<(), JobError> {
        let tx = conn
            .downcast_mut::<MemoryOutboxTx>()
            .filter(|tx| Arc::ptr_eq(&tx.shared, &self.shared))
            .ok_or_else(|| foreign_connection("memory outbox", "MemoryOutboxTx"))?;
        tx.staged.push(request.clone());
        Ok(())
    }

    async fn outbox_claim(
        &self,
        params: &OutboxClaimParams,
    ) -> Result<Vec<OutboxRecord>, JobError> {
        let mut rows = self.shared.rows.lock().expect("outbox lock");
        if let Some((by, at)) = &rows.lease {
            if by != &params.holder && *at > params.live_after() {
                return Ok(Vec::new());
            }
        }
        let from = match params.after {
            Some(after) => std::ops::Bound::Excluded(after),
            None => std::ops::Bound::Unbounded,
        };
        let head: Vec<OutboxRecord> = rows
            .pending
            .range((from, std::ops::Bound::Unbounded))
            .map(|(_, row)| row)
            .take(params.limit)
            .map(|row| OutboxRecord {
                request: row.request.clone(),
                publish_attempts: row.publish_attempts,
            })
            .collect();
        rows.lease = (!head.is_empty() || params.after.is_some())
            .then(|| (params.holder.clone(), params.now));
        Ok(head)
    }

    async fn outbox_published(
        &self,
        settle: &OutboxSettle<'_>,
        published: &[OutboxPublished],
    ) -> Result<u64, JobError> {
        let ids: Vec<JobId> = published.iter().map(|p| p.id).collect();
        let mut rows = self.shared.rows.lock().expect("outbox lock");
        let keys: Vec<_> = rows.held(settle.holder, &ids).map(|(key, _)| key).collect();
        for key in &keys {
            rows.pending.remove(key);
            rows.settled.insert(key.1, (settle.now, false));
        }
        Ok(keys.len() as u64)
    }

    async fn outbox_release(
        &self,
        settle: &OutboxSettle<'_>,
        ids: &[JobId],
        failed: Option<(JobId, &str)>,
    ) -> Result<u64, JobError> {
        let mut rows = self.shared.rows.lock().expect("outbox lock");
        let mut changed = 0;
        for (key, row) in rows.held(settle.holder, ids) {
            if let Some((_, code)) = failed.filter(|(id, _)| *id == key.1) {
                row.publish_attempts += 1;
                row.last_error_code = Some((settle.now, code.to_string()));
            }
            changed += 1;
        }
        if rows
            .lease
            .as_ref()
            .is_some_and(|(by, _)| by == settle.holder)
        {
            rows.lease = None;
        }
        Ok(changed)
    }

    async fn outbox_refused(
        &self,
        settle: &OutboxSettle<'_>,
        id: JobId,
        _code: &str,
    ) -> Result<u64, JobError> {
        let mut rows = self.shared.rows.lock().expect("outbox lock");
        let keys: Vec<_> = rows
            .held(settle.holder, &[id])
            .map(|(key, _)| key)
            .collect();
        for key in &keys {
            rows.pending.remove(key);
            rows.settled.insert(key.1, (settle.now, true));
        }
        Ok(keys.len() as u64)
    }

    async fn outbox_stats(&self) -> Result<OutboxStats, JobError> {
        let rows = self.shared.rows.lock().expect("outbox lock");
        let failing: Vec<_> = rows
            .pending
            .values()
            .filter_map(|row| row.last_error_code.as_ref())
            .collect();
        Ok(OutboxStats {
            backlog: rows.pending.len() as u64,
            oldest_staged_at: rows.pending.keys().next().map(|(at, _)| *at),
            failing: failing.len() as u64,
            last_error_code: failing
                .iter()
                .max_by_key(|(at, _)| *at)
                .map(|(_, code)| code.clone()),
            refused: rows
                .settled
                .values()
                .filter(|(_, refused)| *refused)
                .count() as u64,
            published: rows
                .settled
                .values()
                .filter(|(_, refused)| !*refused)
                .count() as u64,
            lease: rows.lease.as_ref().map(|(holder, at)| OutboxLease {
                holder: holder.clone(),
                claimed_at: *at,
            }),
        })
    }

    async fn outbox_purge(&self, before: Timestamp, limit: u32) -> Result<u64, JobError> {
        let mut rows = self.shared.rows.lock().expect("outbox lock");
        let gone: Vec<JobId> = rows
            .settled
            .iter()
            .filter(|(_, (at, _))| *at < before)
            .map(|(id, _)| *id)
            .take(limit as usize)
            .collect();
        for id in &gone {
            rows.settled.remove(id);
        }
        Ok(gone.len() as u64)
    }

    async fn outbox_wake(&self) -> Result<Option<WakeReceiver>, JobError> {
        let (tx, rx) = mpsc::channel(64);
        let _ = tx.try_send(WakeSignal::Live);
        self.shared.wakes.lock().expect("outbox wakes").push(tx);
        Ok(Some(rx))
    }
}
