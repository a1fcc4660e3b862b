//! The Postgres driver's [`JobIntrospection`]: one named statement per verb
//! (`sql/introspect_*.sql`), rendered for the driver's schema. The counters are not written
//! here: each settle statement (ack, batched ack, nack, the claim's burial) moves them itself,
//! in the CTE `sql/fragment_count_settled.sql` splices into it.

use async_trait::async_trait;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, Row};

use super::classify::{classify, Op};
use super::rows;
use super::PostgresDriver;
use crate::driver::introspect::*;
use crate::driver::introspect::{
    CounterTotalsParams, CountersParams, CountersRollupParams, JobPromoteParams, JobRemoveParams,
    QueuePauseParams, QueueResumeParams, WorkerForgetParams, WorkerListParams,
};
use crate::driver::records::*;
use crate::driver::JobGetParams;
use crate::error::{ErrorCode, JobError};

fn summary(row: &PgRow) -> Result<JobSummary, JobError> {
    JobSummary::from_row(row).map_err(|e| classify(Op::DecodeJobSummary, e))
}

fn bulk(row: &PgRow, operation: Op) -> Result<BulkResult, JobError> {
    BulkResult::from_row(row).map_err(|e| classify(operation, e))
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Whether a statement failed on the live-key index (another job holds the key: a live one, or
/// one inside its unique period).
fn live_key_taken(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::Database(db) => {
            db.code().as_deref() == Some("23505")
                && db
                    .constraint()
                    .is_some_and(|c| c.ends_with("idempotency_live_idx"))
        }
        _ => false,
    }
}

/// A prefix a job id can start with: lower-case hex and dashes (so `like` sees no wildcard).
fn id_prefix(prefix: &Option<String>) -> Option<String> {
    prefix.as_ref().map(|p| {
        if p.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            p.to_ascii_lowercase()
        } else {
            // Matches no id.
            "~".to_string()
        }
    })
}

impl PostgresDriver {
    async fn refusal_for(&self, verb: Bulk, id: JobId) -> JobError {
        match crate::driver::JobDriver::job_get(self, &JobGetParams { id }).await {
            Ok(row) => refusal(verb, row.as_ref(), id),
            Err(error) => error,
        }
    }
}

#[async_trait]
impl JobIntrospection for PostgresDriver {
    async fn job_list(&self, params: &JobListParams) -> Result<JobPage, JobError> {
        let (limit, cursor) = check_list(params)?;
        let (sql, at) = match cursor {
            Some(Cursor::Before(c)) => (self.sql.introspect_job_list_newer.clone(), Some(c)),
            Some(Cursor::After(c)) => (self.sql.introspect_job_list_older.clone(), Some(c)),
            None => (self.sql.introspect_job_list_older.clone(), None),
        };
        // Planned with this call's values: each filter is optional (`$n is null or ...`), and
        // the generic plan Postgres switches a prepared statement to after five runs cannot
        // drop the filters a call leaves out, so it read the whole table for a page of 50
        // (1.3 s at 1,000,000 rows); planned with the values, a page is an index walk.
        let list = |e| classify(Op::IntrospectJobList, e);
        let mut tx = super::pooled::begin(&self.pool).await.map_err(list)?;
        sqlx::query("set local plan_cache_mode = force_custom_plan")
            .execute(&mut *tx)
            .await
            .map_err(list)?;
        let rows = sqlx::query(sql)
            .bind(&params.queue)
            .bind(&params.name)
            .bind(params.state.map(JobState::as_str))
            .bind(&params.tenant_id)
            .bind(id_prefix(&params.id_prefix))
            .bind(params.created_from)
            .bind(params.created_to)
            .bind(at.map(|c| c.created_at()))
            .bind(at.map(|c| c.id))
            .bind(i64::from(limit))
            .fetch_all(&mut *tx)
            .await
            .map_err(list)?;
        tx.commit().await.map_err(list)?;
        let mut jobs = rows.iter().map(summary).collect::<Result<Vec<_>, _>>()?;
        if matches!(cursor, Some(Cursor::Before(_))) {
            jobs.reverse();
        }
        Ok(page_of(jobs, limit, cursor))
    }

    async fn job_remove(&self, params: &JobRemoveParams) -> Result<JobRecord, JobError> {
        let id = params.id;
        let row = sqlx::query(self.sql.introspect_job_remove.clone())
            .bind(id)
            .bind(params.now)
            .bind(&params.actor)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobRemove, e))?;
        match row {
            Some(row) => {
                // A live job removed is gone for its dependents as a finished one is.
                self.release_after(params.now).await;
                rows::job_record(&row)
            }
            None => Err(self.refusal_for(Bulk::Remove, id).await),
        }
    }

    async fn job_requeue(&self, params: &JobRequeueParams) -> Result<JobRecord, JobError> {
        // Another finished row of the key whose unique period lapsed holds nothing, but would
        // make the index refuse the revival: clear its mark first.
        sqlx::query(self.sql.introspect_job_requeue_lapse.clone())
            .bind(params.id)
            .bind(params.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobRequeue, e))?;
        let result = sqlx::query(self.sql.introspect_job_requeue.clone())
            .bind(params.id)
            .bind(&params.from_step)
            .bind(params.now)
            .bind(&*self.wake_channel)
            .bind(&params.actor)
            .fetch_optional(&self.pool)
            .await;
        let id = params.id;
        let row = match result {
            Ok(row) => row,
            Err(error) if live_key_taken(&error) => {
                let row = crate::driver::JobDriver::job_get(self, &JobGetParams { id }).await?;
                return Err(match row {
                    Some(row) => duplicate(&row, None),
                    None => not_found(id),
                });
            }
            Err(error) => return Err(classify(Op::IntrospectJobRequeue, error)),
        };
        if let Some(row) = row {
            return rows::job_record(&row);
        }
        let current = crate::driver::JobDriver::job_get(self, &JobGetParams { id }).await?;
        match (&current, &params.from_step) {
            (Some(row), Some(step)) if !row.state.is_live() => Err(unknown_step(id, step)),
            _ => Err(refusal(Bulk::Requeue, current.as_ref(), id)),
        }
    }

    async fn job_promote(&self, params: &JobPromoteParams) -> Result<JobRecord, JobError> {
        let (id, now) = (params.id, params.now);
        let row = sqlx::query(self.sql.introspect_job_promote.clone())
            .bind(id)
            .bind(now)
            .bind(&*self.wake_channel)
            .bind(&params.actor)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobPromote, e))?;
        match row {
            Some(row) => rows::job_record(&row),
            None => Err(self.refusal_for(Bulk::Promote, id).await),
        }
    }

    async fn job_requeue_many(&self, p: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Requeue, p.state)?;
        sqlx::query(self.sql.introspect_job_requeue_many_lapse.clone())
            .bind(p.state.as_str())
            .bind(&p.queue)
            .bind(&p.name)
            .bind(&p.tenant_id)
            .bind(p.now)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobRequeueMany, e))?;
        let result = sqlx::query(self.sql.introspect_job_requeue_many.clone())
            .bind(p.state.as_str())
            .bind(&p.queue)
            .bind(&p.name)
            .bind(&p.tenant_id)
            .bind(p.now)
            .bind(i64::from(MAX_BULK_ROWS))
            .bind(&*self.wake_channel)
            .bind(&p.actor)
            .fetch_one(&self.pool)
            .await;
        match result {
            Ok(row) => bulk(&row, Op::IntrospectJobRequeueMany),
            Err(error) if live_key_taken(&error) => Err(JobError::new(
                ErrorCode::JobDuplicate,
                "a job took one of the keys while the requeue ran; nothing moved, call again",
            )),
            Err(error) => Err(classify(Op::IntrospectJobRequeueMany, error)),
        }
    }

    async fn job_remove_many(&self, p: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Remove, p.state)?;
        let row = sqlx::query(self.sql.introspect_job_remove_many.clone())
            .bind(p.state.as_str())
            .bind(&p.queue)
            .bind(&p.name)
            .bind(&p.tenant_id)
            .bind(i64::from(MAX_BULK_ROWS))
            .bind(p.now)
            .bind(&p.actor)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobRemoveMany, e))?;
        self.release_after(p.now).await;
        bulk(&row, Op::IntrospectJobRemoveMany)
    }

    async fn job_promote_many(&self, p: &JobBulkParams) -> Result<BulkResult, JobError> {
        check_bulk_state(Bulk::Promote, p.state)?;
        let row = sqlx::query(self.sql.introspect_job_promote_many.clone())
            .bind(p.state.as_str())
            .bind(&p.queue)
            .bind(&p.name)
            .bind(&p.tenant_id)
            .bind(p.now)
            .bind(i64::from(MAX_BULK_ROWS))
            .bind(&*self.wake_channel)
            .bind(&p.actor)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectJobPromoteMany, e))?;
        bulk(&row, Op::IntrospectJobPromoteMany)
    }

    async fn job_history(
        &self,
        params: &JobHistoryParams,
    ) -> Result<Vec<JobHistoryEntry>, JobError> {
        let limit = check_history(params)?;
        let failed = |e| classify(Op::IntrospectJobHistory, e);
        let rows = sqlx::query(self.sql.introspect_job_history.clone())
            .bind(params.id)
            .bind(&params.tenant_id)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(failed)?;
        rows.iter()
            .map(|row| JobHistoryEntry::from_row(row).map_err(failed))
            .collect()
    }

    async fn queue_pause(&self, params: &QueuePauseParams<'_>) -> Result<(), JobError> {
        let QueuePauseParams { queue, actor, now } = *params;
        sqlx::query(self.sql.introspect_queue_pause.clone())
            .bind(queue)
            .bind(now)
            .bind(actor)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectQueuePause, e))?;
        Ok(())
    }

    async fn queue_resume(&self, params: &QueueResumeParams<'_>) -> Result<bool, JobError> {
        let QueueResumeParams { queue, now: _ } = *params;
        let row = sqlx::query(self.sql.introspect_queue_resume.clone())
            .bind(queue)
            .bind(&*self.wake_channel)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectQueueResume, e))?;
        row.try_get("resumed")
            .map_err(|e| classify(Op::IntrospectQueueResume, e))
    }

    async fn queue_paused(&self) -> Result<Vec<QueuePause>, JobError> {
        let rows = sqlx::query(self.sql.introspect_queue_paused.clone())
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectQueuePaused, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::IntrospectQueuePaused, e);
                Ok(QueuePause {
                    queue: row.try_get("queue").map_err(d)?,
                    paused_at: row.try_get("paused_at").map_err(d)?,
                    paused_by: row.try_get("paused_by").map_err(d)?,
                })
            })
            .collect()
    }

    async fn worker_announce(&self, a: &WorkerAnnounce) -> Result<(), JobError> {
        let in_flight: Vec<JobId> = a
            .in_flight
            .iter()
            .take(MAX_WORKER_IN_FLIGHT)
            .copied()
            .collect();
        sqlx::query(self.sql.introspect_worker_announce.clone())
            .bind(&a.id)
            .bind(&a.host)
            .bind(a.started_at)
            .bind(&a.queues)
            .bind(i32::try_from(a.slots).unwrap_or(i32::MAX))
            .bind(&in_flight)
            .bind(i32::try_from(a.in_flight_count).unwrap_or(i32::MAX))
            .bind(a.now)
            .bind(crate::clock::add(a.now, a.ttl))
            .bind(sqlx::types::Json(&a.settings))
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectWorkerAnnounce, e))?;
        Ok(())
    }

    async fn worker_forget(&self, params: &WorkerForgetParams<'_>) -> Result<(), JobError> {
        let WorkerForgetParams { id } = *params;
        sqlx::query(self.sql.introspect_worker_forget.clone())
            .bind(id)
            .execute(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectWorkerForget, e))?;
        Ok(())
    }

    async fn worker_list(&self, params: &WorkerListParams) -> Result<Vec<WorkerRow>, JobError> {
        let WorkerListParams { now } = *params;
        let rows = sqlx::query(self.sql.introspect_worker_list.clone())
            .bind(now)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectWorkerList, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::IntrospectWorkerList, e);
                let slots: i32 = row.try_get("slots").map_err(d)?;
                let count: i32 = row.try_get("in_flight_count").map_err(d)?;
                let settings: sqlx::types::Json<WorkerSettings> =
                    row.try_get("settings").map_err(d)?;
                Ok(WorkerRow {
                    id: row.try_get("id").map_err(d)?,
                    host: row.try_get("host").map_err(d)?,
                    started_at: row.try_get("started_at").map_err(d)?,
                    queues: row.try_get("queues").map_err(d)?,
                    slots: u32::try_from(slots).unwrap_or(0),
                    in_flight: row.try_get("in_flight").map_err(d)?,
                    in_flight_count: u32::try_from(count).unwrap_or(0),
                    settings: settings.0,
                    heartbeat_at: row.try_get("heartbeat_at").map_err(d)?,
                    expires_at: row.try_get("expires_at").map_err(d)?,
                })
            })
            .collect()
    }

    async fn counters(&self, params: &CountersParams<'_>) -> Result<Vec<CounterBucket>, JobError> {
        let CountersParams { name, since } = *params;
        let rows = sqlx::query(self.sql.introspect_counters.clone())
            .bind(name)
            .bind(since)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectCounters, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::IntrospectCounters, e);
                let width: i32 = row.try_get("width_secs").map_err(d)?;
                Ok(CounterBucket {
                    bucket: Some(row.try_get("bucket").map_err(d)?),
                    width_secs: u32::try_from(width).unwrap_or(0),
                    done: non_negative(row.try_get("done").map_err(d)?),
                    retried: non_negative(row.try_get("retried").map_err(d)?),
                    failed: non_negative(row.try_get("failed").map_err(d)?),
                    dead: non_negative(row.try_get("dead").map_err(d)?),
                    duration_ms: non_negative(row.try_get("duration_ms").map_err(d)?),
                })
            })
            .collect()
    }

    async fn counter_totals(
        &self,
        params: &CounterTotalsParams,
    ) -> Result<Vec<CounterTotals>, JobError> {
        let CounterTotalsParams { since } = *params;
        let rows = sqlx::query(self.sql.introspect_counter_totals.clone())
            .bind(since)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectCounterTotals, e))?;
        rows.iter()
            .map(|row| {
                let d = |e| classify(Op::IntrospectCounterTotals, e);
                Ok(CounterTotals {
                    name: row.try_get("name").map_err(d)?,
                    done: non_negative(row.try_get("done").map_err(d)?),
                    retried: non_negative(row.try_get("retried").map_err(d)?),
                    failed: non_negative(row.try_get("failed").map_err(d)?),
                    dead: non_negative(row.try_get("dead").map_err(d)?),
                    duration_ms: non_negative(row.try_get("duration_ms").map_err(d)?),
                })
            })
            .collect()
    }

    async fn counters_rollup(&self, params: &CountersRollupParams) -> Result<u64, JobError> {
        let CountersRollupParams { now } = *params;
        let moved: i64 = sqlx::query_scalar(self.sql.introspect_counters_rollup.clone())
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| classify(Op::IntrospectCountersRollup, e))?;
        Ok(non_negative(moved))
    }
}
