//! The enqueue: one job on the pinned enqueue connection (once more on a fresh one when it
//! died), a batch in one transaction (plain inserts first, then the dedupe form when a job is
//! held), and a job in a caller's own transaction.

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArguments, PgConnection};
use sqlx::{Arguments, Connection, Row};

use std::time::Instant;

use super::classify::{classify, Op};
use super::{floors, PostgresDriver};
use crate::clock::Timestamp;
use crate::driver::records::*;
use crate::error::{ErrorCode, JobError};

/// The SQLSTATE of a unique violation.
const UNIQUE_VIOLATION: &str = "23505";

/// Adds a request's first eight columns as every enqueue statement numbers them (and the
/// outbox's stage): $1 id, $2 run id, $3 name, $4 queue, $5 input, $6 key, $7 tenant, $8 max
/// attempts. Added to the arguments directly: each `Query::bind` moves the whole query.
fn add_job(arguments: &mut PgArguments, request: &EnqueueRequest) -> Result<(), BoxDynError> {
    arguments.add(request.id)?;
    arguments.add(request.run_id)?;
    arguments.add(&request.name)?;
    arguments.add(&request.queue)?;
    arguments.add(&request.input)?;
    arguments.add(&request.idempotency_key)?;
    arguments.add(&request.tenant_id)?;
    arguments.add(i32::try_from(request.max_attempts).unwrap_or(i32::MAX))
}

/// `statement` with a request's first eight columns bound (`add_job`); the caller binds the
/// statement's own parameters after them.
pub(super) fn job_query<'q>(
    statement: sqlx::SqlStr,
    request: &EnqueueRequest,
) -> Result<sqlx::query::Query<'q, sqlx::Postgres, PgArguments>, sqlx::Error> {
    let mut arguments = PgArguments::default();
    add_job(&mut arguments, request).map_err(sqlx::Error::Encode)?;
    Ok(sqlx::query_with(statement, arguments))
}

/// What every single-job enqueue statement numbers $1 to $14: the job's eight columns
/// (`add_job`), $9 run at, $10 now, $11 traceparent, $12 actor, $13 priority, $14 the new row's
/// `unique_until`. Sized up front for them and the two a statement may bind after them: grown
/// one value at a time they were reallocated five times a call.
fn enqueue_arguments(request: &EnqueueRequest, now: Timestamp) -> Result<PgArguments, sqlx::Error> {
    let mut arguments = PgArguments::default();
    arguments.reserve(
        16,
        ARGUMENT_BYTES
            + request.name.len()
            + request.queue.len()
            + request.idempotency_key.len()
            + request.tenant_id.as_ref().map_or(0, String::len),
    );
    let added = add_job(&mut arguments, request)
        .and_then(|()| arguments.add(request.run_at))
        .and_then(|()| arguments.add(now))
        .and_then(|()| arguments.add(&request.traceparent))
        .and_then(|()| arguments.add(&request.actor))
        .and_then(|()| arguments.add(request.priority))
        .and_then(|()| arguments.add(request.unique_until(now)));
    added.map(|()| arguments).map_err(sqlx::Error::Encode)
}

/// Room for an enqueue's fixed-width values, their length prefixes, a traceparent and a small
/// input; a larger input grows the buffer once.
const ARGUMENT_BYTES: usize = 384;

/// The row that holds an enqueue's job: its own id, or the holder of its key.
pub(super) struct Holder {
    pub id: JobId,
    pub run_id: RunId,
    /// The request's own id (an outbox re-publish), not another job.
    pub same_id: bool,
    pub state: JobState,
}

/// Whose transaction an enqueue runs in: its own one-statement transaction has committed when
/// the statement returns, so the client decides its wake announcement (`announce.rs`); a
/// caller's (or a batch's) commits later, unseen, so its statement decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transaction {
    Own,
    Callers,
}

impl PostgresDriver {
    pub(super) async fn enqueue_one(
        &self,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        match self.enqueue_pinned(request).await {
            (Err(error), true) if error.code() == Some(ErrorCode::DriverUnavailable) => {
                // The pinned connection died since its last call (a server restart, an idle
                // timeout): once more, on a fresh one. The request keeps its id, so a first try
                // that did commit is found by id: that row is this very job, not a duplicate.
                let (retried, _) = self.enqueue_pinned(request).await;
                retried.map(|r| EnqueueResult {
                    deduped: r.deduped && r.id != request.id,
                    ..r
                })
            }
            (result, _) => result,
        }
    }

    pub(super) async fn enqueue_many(
        &self,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        check_batch_without_dependencies(requests)?;
        let mut lease = self
            .pinned
            .enqueue
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        let result = self.enqueue_many_on(lease.conn(), requests).await;
        lease.end(&result);
        result
    }

    /// Enqueues on the caller's connection or transaction: the job exists if and only if that
    /// transaction commits (the transactional outbox).
    pub async fn enqueue_in(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
    ) -> Result<EnqueueResult, JobError> {
        self.enqueue_on(conn, request, request.now, Transaction::Callers)
            .await
    }

    /// Inserts `request` as of `now` (its own `now`, or its batch's).
    async fn enqueue_on(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
        now: Timestamp,
        transaction: Transaction,
    ) -> Result<EnqueueResult, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        // The insert inserts nothing when a row holds the job; the holder lookup then names it.
        // A holder that finished in between frees the key, and the lookup clears a lapsed unique
        // period's mark: insert again. Three rounds at most.
        for _ in 0..ENQUEUE_ROUNDS {
            let inserted = match transaction {
                Transaction::Own => self.insert_own(conn, request, now).await,
                Transaction::Callers => self.insert_in_callers(conn, request, now).await,
            }
            .map_err(failed)?;
            if inserted {
                self.floors.lower(
                    &request.queue,
                    request.tenant_id.as_deref(),
                    floors::Position::of(request.priority, request.run_at, request.id),
                );
                return Ok(EnqueueResult {
                    id: request.id,
                    run_id: request.run_id,
                    deduped: false,
                });
            }
            let Some(holder) = self.holder_on(conn, request, now).await? else {
                continue;
            };
            if EnqueueResult::replaces(request, holder.same_id, holder.state) {
                self.replace_queued(conn, holder.id, request, now).await?;
            }
            return EnqueueResult::held(request, holder.id, holder.run_id, holder.same_id);
        }
        Err(EnqueueResult::key_kept_moving(request))
    }

    /// The insert in the driver's own one-statement transaction: silent (`job_enqueue`), or
    /// announcing (`job_enqueue_announced`) a job due later, or the first job of its queue in
    /// the announcer's window. Answers whether it inserted the job; one inserted silently owes
    /// its queue a trailing announcement, now that it committed, and one that announced its
    /// queue covers the jobs that owed one before it was sent.
    async fn insert_own(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<bool, sqlx::Error> {
        let due_now = request.run_at <= now;
        let sent = Instant::now();
        let announced = !due_now || self.announcer.at_send(&request.queue, sent);
        let inserted = if announced {
            sqlx::query_with(
                self.sql.job_enqueue_announced.clone(),
                enqueue_arguments(request, now)?,
            )
            .bind(&*self.wake_channel)
            .fetch_optional(&mut *conn)
            .await?
            .is_some()
        } else {
            sqlx::query_with(
                self.sql.job_enqueue.clone(),
                enqueue_arguments(request, now)?,
            )
            .execute(&mut *conn)
            .await?
            .rows_affected()
                == 1
        };
        match (inserted, announced) {
            (true, false) => self
                .announcer
                .owe(&request.queue, &self.pool, &self.wake_channel),
            (true, true) if due_now => self.announcer.covered(&request.queue, sent),
            _ => {}
        }
        Ok(inserted)
    }

    /// The insert in a caller's transaction (`job_enqueue_in`), whose statement decides its
    /// announcement (the driver never sees the commit). Answers whether it inserted the job.
    async fn insert_in_callers(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<bool, sqlx::Error> {
        let arguments = enqueue_arguments(request, now)?;
        Ok(sqlx::query_with(self.sql.job_enqueue_in.clone(), arguments)
            .bind(&*self.wake_channel)
            .bind(wake_slot(now))
            .fetch_optional(&mut *conn)
            .await?
            .is_some())
    }

    /// The row holding `request`'s job at `now` (`job_enqueue_holder.sql`, which also clears a
    /// lapsed unique mark): its own id first, else the holder of its key; `None` when the key
    /// is free again.
    pub(super) async fn holder_on(
        &self,
        conn: &mut PgConnection,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<Option<Holder>, JobError> {
        let failed = |e| classify(Op::JobEnqueue, e);
        let holder = sqlx::query(self.sql.job_enqueue_holder.clone())
            .bind(request.id)
            .bind(&request.name)
            .bind(&request.tenant_id)
            .bind(&request.idempotency_key)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await
            .map_err(failed)?;
        let Some(row) = holder else {
            return Ok(None);
        };
        Ok(Some(Holder {
            id: row.try_get("id").map_err(failed)?,
            run_id: row.try_get("run_id").map_err(failed)?,
            same_id: row.try_get("same_id").map_err(failed)?,
            state: row.try_get("state").map_err(failed)?,
        }))
    }

    /// Debounce: the queued holder `id` takes `request`'s input and run time (nothing when it
    /// started meanwhile).
    async fn replace_queued(
        &self,
        conn: &mut PgConnection,
        id: JobId,
        request: &EnqueueRequest,
        now: Timestamp,
    ) -> Result<(), JobError> {
        let replaced = sqlx::query(self.sql.job_replace_queued.clone())
            .bind(id)
            .bind(&request.input)
            .bind(request.run_at)
            .bind(now)
            .bind(&*self.wake_channel)
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| classify(Op::JobEnqueue, e))?;
        if let Some(row) = replaced {
            // Pushed later, the old position only makes a claim look early; pulled earlier, the
            // floor must come down to it (in the holder's own priority class).
            let priority: i16 = row
                .try_get("priority")
                .map_err(|e| classify(Op::JobEnqueue, e))?;
            self.floors.lower(
                &request.queue,
                request.tenant_id.as_deref(),
                floors::Position::of(priority, request.run_at, id),
            );
        }
        Ok(())
    }

    /// `statement` (job_enqueue_many or its dedupe form) bound to a whole batch (`UNNEST`
    /// arrays). The arrays borrow the requests' fields: a batch's inputs and texts are encoded
    /// straight from them, never copied first (copies were a tenth of a bulk enqueue's client
    /// time).
    fn bind_batch<'q>(
        &self,
        statement: &sqlx::SqlStr,
        batch: &'q [EnqueueRequest],
        now: Timestamp,
    ) -> sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments> {
        let text = |f: fn(&'q EnqueueRequest) -> &'q str| batch.iter().map(f).collect::<Vec<_>>();
        let maybe =
            |f: fn(&'q EnqueueRequest) -> Option<&'q str>| batch.iter().map(f).collect::<Vec<_>>();
        sqlx::query(statement.clone())
            .bind(batch.iter().map(|r| r.id).collect::<Vec<_>>())
            .bind(batch.iter().map(|r| r.run_id).collect::<Vec<_>>())
            .bind(text(|r| &r.name))
            .bind(text(|r| &r.queue))
            .bind(
                batch
                    .iter()
                    .map(|r| sqlx::types::Json(&r.input))
                    .collect::<Vec<_>>(),
            )
            .bind(text(|r| &r.idempotency_key))
            .bind(maybe(|r| r.tenant_id.as_deref()))
            .bind(
                batch
                    .iter()
                    .map(|r| i32::try_from(r.max_attempts).unwrap_or(i32::MAX))
                    .collect::<Vec<_>>(),
            )
            .bind(batch.iter().map(|r| r.run_at).collect::<Vec<_>>())
            .bind(maybe(|r| r.traceparent.as_deref()))
            .bind(now)
            .bind(&*self.wake_channel)
            .bind(maybe(|r| r.actor.as_deref()))
            .bind(batch.iter().map(|r| r.priority).collect::<Vec<_>>())
            .bind(
                batch
                    .iter()
                    .map(|r| r.unique_until(now))
                    .collect::<Vec<_>>(),
            )
    }

    /// Inserts a batch of jobs none of which is held, in one plain statement; `Ok(false)` when
    /// one was held after all (a unique violation: the transaction is then aborted).
    async fn enqueue_batch_new(
        &self,
        conn: &mut PgConnection,
        batch: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<bool, JobError> {
        let inserted = self
            .bind_batch(&self.sql.job_enqueue_many, batch, now)
            .fetch_one(&mut *conn)
            .await;
        match inserted {
            Ok(_) => Ok(true),
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some(UNIQUE_VIOLATION) => {
                Ok(false)
            }
            Err(e) => Err(classify(Op::JobEnqueueMany, e)),
        }
    }

    /// One statement for a whole batch that may hold jobs already (`UNNEST` arrays); a row
    /// whose key holder committed while the statement ran goes through the single-row
    /// statement afterwards.
    async fn enqueue_batch(
        &self,
        conn: &mut PgConnection,
        batch: &[EnqueueRequest],
        now: Timestamp,
    ) -> Result<Vec<EnqueueResult>, JobError> {
        let failed = |e| classify(Op::JobEnqueueMany, e);
        let rows = self
            .bind_batch(&self.sql.job_enqueue_many_dedupe, batch, now)
            .fetch_all(&mut *conn)
            .await
            .map_err(failed)?;
        // Every job answers as inserted unless a row after the summary row names it.
        let mut out: Vec<EnqueueResult> = batch.iter().map(EnqueueResult::inserted).collect();
        for row in &rows {
            let Some(ord) = row.try_get::<Option<i64>, _>("ord").map_err(failed)? else {
                continue;
            };
            let index = usize::try_from(ord - 1)
                .ok()
                .filter(|i| *i < batch.len())
                .ok_or_else(|| {
                    JobError::new(
                        ErrorCode::Driver,
                        "job_enqueue_many answered a position outside its batch",
                    )
                })?;
            let id: Option<JobId> = row.try_get("id").map_err(failed)?;
            let run_id: Option<RunId> = row.try_get("run_id").map_err(failed)?;
            out[index] = match (id, run_id) {
                (Some(id), Some(run_id)) => EnqueueResult {
                    id,
                    run_id,
                    deduped: true,
                },
                _ => {
                    self.enqueue_on(&mut *conn, &batch[index], now, Transaction::Callers)
                        .await?
                }
            };
        }
        Ok(out)
    }

    /// A single enqueue on the pinned connection (or a pooled one when it is busy); answers
    /// whether the pinned one was used.
    async fn enqueue_pinned(
        &self,
        request: &EnqueueRequest,
    ) -> (Result<EnqueueResult, JobError>, bool) {
        let mut lease = match self
            .pinned
            .enqueue
            .lease(&self.pool, !self.pool_sets_nodelay)
            .await
        {
            Ok(lease) => lease,
            Err(e) => return (Err(classify(Op::JobEnqueue, e)), false),
        };
        let pinned = lease.is_pinned();
        let result = self
            .enqueue_on(lease.conn(), request, request.now, Transaction::Own)
            .await;
        lease.end(&result);
        (result, pinned)
    }

    async fn enqueue_many_on(
        &self,
        conn: &mut PgConnection,
        requests: &[EnqueueRequest],
    ) -> Result<Vec<EnqueueResult>, JobError> {
        // One `now` for the batch (see `JobDriver::job_enqueue_many`): a job due at its own
        // `now` is `ready`, whichever request read the clock last.
        let Some(now) = requests.iter().map(|r| r.now).max() else {
            return Ok(Vec::new());
        };
        // A deduped row lowers a floor for nothing, which costs nothing.
        self.floors.lower_all(requests.iter().map(|r| {
            (
                r.queue.as_str(),
                r.tenant_id.as_deref(),
                floors::Position::of(r.priority, r.run_at, r.id),
            )
        }));
        // Refusing a duplicate must name it, and a debounced one must replace its holder: one
        // statement per job when the batch holds either.
        let refuse_duplicates = requests
            .iter()
            .any(|r| r.on_conflict != ConflictPolicy::Dedupe);
        if !refuse_duplicates && requests.len() <= ENQUEUE_BATCH {
            // One statement is its own transaction: all of them or none, with no BEGIN and
            // COMMIT round trips around it. A job held already fails it (and only it), and the
            // batch is done again below, answering each held one.
            if self.enqueue_batch_new(conn, requests, now).await? {
                return Ok(requests.iter().map(EnqueueResult::inserted).collect());
            }
        } else if !refuse_duplicates {
            // First as plain inserts, in one transaction: all of them or none. A job held
            // already aborts it, and the batch is done again below, answering each held one.
            let mut tx = conn
                .begin()
                .await
                .map_err(|e| classify(Op::JobEnqueueMany, e))?;
            let mut all_new = true;
            for chunk in requests.chunks(ENQUEUE_BATCH) {
                if !self.enqueue_batch_new(&mut tx, chunk, now).await? {
                    all_new = false;
                    break;
                }
            }
            if all_new {
                tx.commit()
                    .await
                    .map_err(|e| classify(Op::JobEnqueueMany, e))?;
                return Ok(requests.iter().map(EnqueueResult::inserted).collect());
            }
            tx.rollback()
                .await
                .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        }
        // One transaction: all of them or none.
        let mut tx = conn
            .begin()
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        let mut out = Vec::with_capacity(requests.len());
        if refuse_duplicates {
            for request in requests {
                out.push(
                    self.enqueue_on(&mut tx, request, now, Transaction::Callers)
                        .await?,
                );
            }
        } else {
            for chunk in requests.chunks(ENQUEUE_BATCH) {
                out.extend(self.enqueue_batch(&mut tx, chunk, now).await?);
            }
        }
        tx.commit()
            .await
            .map_err(|e| classify(Op::JobEnqueueMany, e))?;
        Ok(out)
    }
}

/// Jobs per statement in `job_enqueue_many`.
const ENQUEUE_BATCH: usize = 5_000;

/// Enqueues in a caller's transaction announce their queue at most once per slot of this
/// length (the driver's own: `announce::WINDOW`).
const WAKE_SLOT_MS: i64 = 250;

/// The start of the wake slot `now` falls in.
fn wake_slot(now: Timestamp) -> Timestamp {
    let ms = now.timestamp_millis();
    let start = ms - ms.rem_euclid(WAKE_SLOT_MS);
    chrono::DateTime::from_timestamp_millis(start).unwrap_or(now)
}
