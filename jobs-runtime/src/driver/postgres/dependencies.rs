//! Dependencies between jobs on Postgres: the dependent's enqueue, which locks what it names
//! (`dependency_lock.sql`) and starts blocked, cancelled or released as [`Verdict::of`] says;
//! the release pass, which judges the dependents of settled jobs; and the links an operator
//! reads.
//!
//! A settle of a job with dependents notes it in `x_job_releases` in its own transaction
//! (migration 0029's trigger), so nothing is lost if the process dies before judging; the
//! settling call answers `has_dependents` and the driver runs the pass right after it. A pass
//! takes what is noted (its own and any a dead process left), judges each blocked dependent
//! under its row lock, folds the noted group members into their groups (`groups.rs`), and
//! repeats while a cancel notes more.

use std::collections::BTreeMap;

use sqlx::Connection;
use sqlx::Row;

use super::classify::{classify, Op};
use super::enqueue::job_query;
use super::{floors, PostgresDriver};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::JobError;

/// Settled jobs one round of the release pass takes.
const RELEASE_BATCH: i64 = 500;

/// Rounds one pass runs at most (each a cancel's cascade one level deeper); what is left stays
/// noted for the next pass.
const RELEASE_ROUNDS: usize = 64;

/// One blocked dependent as the judge reads it.
struct Judged {
    queue: String,
    tenant: Option<String>,
    priority: i16,
    policy: DependencyFailure,
    dependencies: DependencyStates,
}

impl PostgresDriver {
    /// Enqueues a job with dependencies in one transaction: lock them, judge where the job
    /// starts, insert it with its edges (or answer the holder of its key).
    pub(super) async fn enqueue_dependent(
        &self,
        request: &EnqueueRequest,
        dependencies: &Dependencies,
    ) -> Result<EnqueueResult, JobError> {
        let now = request.now;
        check_dependencies(request.id, dependencies, request.run_at, now)?;
        if let Some(inserted) = self.enqueue_dependent_one(request, dependencies).await? {
            return Ok(inserted);
        }
        // Not the common case (a job named is missing, one failed under the policy `cancel`,
        // or the key is held): the transaction, which names the error or the holder.
        let failed = |e| classify(Op::JobEnqueue, e);
        for _ in 0..ENQUEUE_ROUNDS {
            let mut tx = super::pooled::begin(&self.pool).await.map_err(failed)?;
            let found: BTreeMap<JobId, JobState> = sqlx::query_as(self.sql.dependency_lock.clone())
                .bind(&dependencies.on)
                .bind(&request.tenant_id)
                .fetch_all(&mut *tx)
                .await
                .map_err(failed)?
                .into_iter()
                .collect();
            // Refused, the transaction is dropped and rolls back: nothing was written.
            let start = dependencies.start_among(&found, request.run_at)?;
            let inserted = job_query(self.sql.job_enqueue_dependent.clone(), request)
                .map_err(failed)?
                .bind(start.run_at)
                .bind(now)
                .bind(&*self.wake_channel)
                .bind(start.state.as_str())
                .bind(&request.traceparent)
                .bind(&request.actor)
                .bind(request.priority)
                .bind(request.unique_until(now))
                .bind(start.last_error())
                .bind(start.last_error_code())
                .bind(dependencies.on_failure.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(failed)?;
            if inserted.is_some() {
                sqlx::query(self.sql.dependency_link.clone())
                    .bind(request.id)
                    .bind(&dependencies.on)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
                tx.commit().await.map_err(failed)?;
                if start.state == JobState::Ready {
                    self.floors.lower(
                        &request.queue,
                        request.tenant_id.as_deref(),
                        floors::Position::of(request.priority, start.run_at, request.id),
                    );
                }
                return Ok(EnqueueResult::inserted(request));
            }
            // A row holds the job: answer it, as any enqueue does (the dependencies are not
            // its own). The marks set above only cost those jobs a pass with nothing to judge.
            let holder = self.holder_on(&mut tx, request, now).await?;
            tx.commit().await.map_err(failed)?;
            let Some(holder) = holder else { continue };
            return EnqueueResult::held(request, holder.id, holder.run_id, holder.same_id);
        }
        Err(EnqueueResult::key_kept_moving(request))
    }

    /// The common case in one statement (`job_enqueue_dependent_one.sql`): every job named
    /// exists and none failed under the policy `cancel`, and the key is free. Answers `None`
    /// when it inserted nothing.
    async fn enqueue_dependent_one(
        &self,
        request: &EnqueueRequest,
        dependencies: &Dependencies,
    ) -> Result<Option<EnqueueResult>, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let now = request.now;
        let query = job_query(self.sql.job_enqueue_dependent_one.clone(), request)
            .map_err(failed)?
            .bind(blocked_until())
            .bind(now)
            .bind(&*self.wake_channel)
            .bind(&request.traceparent)
            .bind(&request.actor)
            .bind(request.priority)
            .bind(request.unique_until(now))
            .bind(dependencies.on_failure.as_str())
            .bind(&dependencies.on);
        // On the pinned enqueue connection, as a plain enqueue (`pinned.rs` says why).
        let mut lease = self
            .pinned
            .enqueue
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(failed)?;
        let row = query.fetch_one(lease.conn()).await.map_err(failed);
        lease.end(&row);
        let row = row?;
        let inserted: Option<JobId> = row.try_get("id").map_err(failed)?;
        if inserted.is_none() {
            return Ok(None);
        }
        let state: JobState = row.try_get("state").map_err(failed)?;
        if state == JobState::Ready {
            self.floors.lower(
                &request.queue,
                request.tenant_id.as_deref(),
                floors::Position::of(request.priority, now, request.id),
            );
        }
        Ok(Some(EnqueueResult::inserted(request)))
    }

    /// The release pass after a settle that ended a job with dependents (or a verb that may
    /// have): a failure is logged, never the settle's; what it left stays noted for the next
    /// pass.
    pub(super) async fn release_after(&self, now: Timestamp) {
        if let Err(error) = self.release_pending(now).await {
            tracing::warn!(
                code = error.code().map(|c| c.as_str()),
                "judging the dependents of settled jobs failed; they are judged at the next pass: {}",
                error.summary()
            );
        }
    }

    /// Judges the blocked dependents of every settled job noted in `x_job_releases`, round by
    /// round, each round one transaction.
    pub(super) async fn release_pending(&self, now: Timestamp) -> Result<(), JobError> {
        let failed = |e| classify(Op::JobRelease, e);
        for _ in 0..RELEASE_ROUNDS {
            let mut conn = super::pooled::acquire(&self.pool).await.map_err(failed)?;
            let mut tx = conn.begin().await.map_err(failed)?;
            let taken: Vec<JobId> = sqlx::query_scalar(self.sql.dependency_release_take.clone())
                .bind(RELEASE_BATCH)
                .fetch_all(&mut *tx)
                .await
                .map_err(failed)?;
            if taken.is_empty() {
                return Ok(());
            }
            let rows = sqlx::query(self.sql.dependency_release_judge.clone())
                .bind(&taken)
                .bind(blocked_until())
                .fetch_all(&mut *tx)
                .await
                .map_err(failed)?;
            let mut judged: BTreeMap<JobId, Judged> = BTreeMap::new();
            for row in &rows {
                let id: JobId = row.try_get("id").map_err(failed)?;
                let dependency: JobId = row.try_get("depends_on").map_err(failed)?;
                let state: Option<JobState> = row.try_get("dependency_state").map_err(failed)?;
                let entry = match judged.get_mut(&id) {
                    Some(entry) => entry,
                    None => {
                        let policy: Option<String> =
                            row.try_get("on_dependency_failure").map_err(failed)?;
                        judged.entry(id).or_insert(Judged {
                            queue: row.try_get("queue").map_err(failed)?,
                            tenant: row.try_get("tenant_id").map_err(failed)?,
                            priority: row.try_get("priority").map_err(failed)?,
                            policy: DependencyFailure::from_stored(policy.as_deref().unwrap_or("")),
                            dependencies: Vec::new(),
                        })
                    }
                };
                entry.dependencies.push((dependency, state));
            }
            let (mut released, mut queues) = (Vec::new(), Vec::new());
            let (mut cancelled, mut errors, mut codes) = (Vec::new(), Vec::new(), Vec::new());
            for (id, judged) in judged {
                match Verdict::of(judged.policy, judged.dependencies) {
                    Verdict::Blocked => {}
                    Verdict::Release => {
                        released.push(id);
                        // Due now: this driver's claims seek from below it.
                        self.floors.lower(
                            &judged.queue,
                            judged.tenant.as_deref(),
                            floors::Position::of(judged.priority, now, id),
                        );
                        if !queues.contains(&judged.queue) {
                            queues.push(judged.queue);
                        }
                    }
                    Verdict::Cancel { dependency, state } => {
                        let start = Verdict::Cancel { dependency, state }.start(now);
                        cancelled.push(id);
                        errors.push(start.last_error());
                        codes.push(start.last_error_code());
                    }
                }
            }
            // Most rounds judge nothing (the taken jobs are group members, or their dependents
            // still wait on others): nothing to apply.
            if !released.is_empty() || !cancelled.is_empty() {
                sqlx::query(self.sql.dependency_release_apply.clone())
                    .bind(now)
                    .bind(&released)
                    .bind(&queues)
                    .bind(&*self.wake_channel)
                    .bind(&cancelled)
                    .bind(&errors)
                    .bind(&codes)
                    .execute(&mut *tx)
                    .await
                    .map_err(failed)?;
            }
            // The taken jobs that are group members count in their groups (groups.rs).
            self.fold_groups(&mut tx, &taken, now).await?;
            tx.commit().await.map_err(failed)?;
            // A short round left nothing noted before it, and only a cancel notes more: no
            // round to find nothing (a note written meanwhile is its settle's own pass's).
            if taken.len() < RELEASE_BATCH as usize && cancelled.is_empty() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// A job's links ([`JobLinks`]).
    pub(super) async fn links(&self, id: JobId) -> Result<JobLinks, JobError> {
        let failed = |e| classify(Op::JobGet, e);
        let rows: Vec<(String, JobId, Option<JobState>, Option<String>)> =
            sqlx::query_as(self.sql.job_links.clone())
                .bind(id)
                .bind(MAX_DEPENDENCIES as i64)
                .fetch_all(&self.pool)
                .await
                .map_err(failed)?;
        Ok(JobLinks::from_rows(rows))
    }
}
