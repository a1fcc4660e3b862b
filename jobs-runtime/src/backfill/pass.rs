//! One pass: begin (or adopt, or skip) its ledger row, then page through the source, each page
//! its own durable step, then settle the row.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{Backfill, BackfillReport, BackfillRequest, BackfillTenant, Checkpoint, Pacer, Pass};
use crate::driver::backfill_store::{
    BackfillBegin, BackfillBeginParams, BackfillFinishParams, BackfillProgressParams,
    BackfillStore, PassStatus,
};
use crate::error::{ErrorClass, ErrorCode, JobError};
use crate::run::Run;

/// Not public API: the body `#[backfill]` generates for its job.
#[doc(hidden)]
pub async fn run_backfill<B: Backfill>(
    run: Run,
    request: BackfillRequest,
) -> Result<BackfillReport, JobError> {
    let d = B::BACKFILL;
    check_tenant(d.name, d.tenant, &request)?;
    check_environment(&d, run.environment())?;
    let driver = run.driver().clone();
    let ledger = driver.backfill_store();
    if ledger.is_none() {
        tracing::warn!(
            target: "jobs.backfill.unrecorded",
            backfill = d.name,
            driver = driver.name(),
            "the driver keeps no ledger of backfill passes; the pass runs unrecorded"
        );
    }

    if let Some(ledger) = ledger {
        let begin = ledger
            .backfill_begin(&BackfillBeginParams {
                id: crate::entropy::new_id(),
                name: d.name.to_string(),
                tenant: request.tenant.clone(),
                run_id: run.run_id(),
                job_id: run.job_id(),
                checksum: d.checksum.to_string(),
                force: request.force,
                now: run.now(),
            })
            .await?;
        match begin {
            BackfillBegin::Skipped { previous_run_id } => {
                tracing::info!(
                    target: "jobs.backfill.skipped",
                    backfill = d.name,
                    code = ErrorCode::BackfillApplied.as_str(),
                    previous_run_id = %previous_run_id,
                    "a completed pass exists; enqueue with force to run it again"
                );
                return Ok(BackfillReport {
                    name: d.name.to_string(),
                    batches: 0,
                    rows: 0,
                    skipped: true,
                    previous_run_id: Some(previous_run_id),
                });
            }
            BackfillBegin::Started {
                previous_checksum, ..
            } => {
                if previous_checksum.is_some_and(|previous| previous != d.checksum) {
                    tracing::warn!(
                        target: "jobs.backfill.checksum-moved",
                        backfill = d.name,
                        "the declaration changed since its last completed pass"
                    );
                }
            }
        }
    }

    let swept = match pages::<B>(&run, ledger).await {
        Ok(last) => match check_count::<B>(&run, last.batches).await {
            Ok(()) => Ok(last),
            Err(stalled) => Err((stalled, last)),
        },
        Err(failed) => Err(failed),
    };
    match swept {
        Ok(last) => {
            if let Some(ledger) = ledger {
                ledger
                    .backfill_finish(&BackfillFinishParams {
                        run_id: run.run_id(),
                        status: PassStatus::Completed,
                        batches: last.batches,
                        rows: last.rows,
                        last_cursor: last.cursor.clone(),
                        now: run.now(),
                    })
                    .await?;
            }
            Ok(BackfillReport {
                name: d.name.to_string(),
                batches: last.batches,
                rows: last.rows,
                skipped: false,
                previous_run_id: None,
            })
        }
        Err((error, last)) => {
            // A failure the worker will not retry settles the row; a retry adopts it.
            if let (Some(ledger), true) = (ledger, ends_for_good(&run, &error)) {
                let finished = ledger
                    .backfill_finish(&BackfillFinishParams {
                        run_id: run.run_id(),
                        status: PassStatus::Failed,
                        batches: last.batches,
                        rows: last.rows,
                        last_cursor: last.cursor,
                        now: run.now(),
                    })
                    .await;
                if let Err(unrecorded) = finished {
                    tracing::warn!(
                        target: "jobs.backfill.failure-unrecorded",
                        backfill = d.name,
                        code = unrecorded.code().map(|c| c.as_str()),
                        "a failed pass could not be recorded"
                    );
                }
            }
            Err(error)
        }
    }
}

/// Every page, from the first not yet checkpointed. Answers the last checkpoint, or the error
/// with the last checkpoint reached.
async fn pages<B: Backfill>(
    run: &Run,
    ledger: Option<&dyn BackfillStore>,
) -> Result<Checkpoint, (JobError, Checkpoint)> {
    let d = B::BACKFILL;
    let mut pacer = Pacer::new(d.rate);
    let mut last = Checkpoint {
        cursor: None,
        batches: 0,
        rows: 0,
        done: false,
    };
    for page in 0u64.. {
        let ran = AtomicBool::new(false);
        let before = last.clone();
        let name = format!("batch:{page}");
        let step = run.step(&name, async {
            ran.store(true, Ordering::Relaxed);
            // The wait is spent inside the step: a resumed attempt replays checkpoints
            // without paying their pauses again.
            pacer.wait(run.clock(), run.cancel_token()).await?;
            let pass = Pass::new(run.clone(), d.name, page);
            let done = B::page(pass, before.cursor.clone(), d.batch).await?;
            let exhausted = done.next.is_none() || done.rows < u64::from(d.batch);
            Ok::<_, JobError>(Checkpoint {
                cursor: done.next.or(before.cursor),
                batches: before.batches + 1,
                rows: before.rows + done.rows,
                done: exhausted,
            })
        });
        last = step.await.map_err(|e| (e, last.clone()))?;
        // A replayed page writes nothing: the ledger already saw it.
        if ran.load(Ordering::Relaxed) {
            if let Some(ledger) = ledger {
                ledger
                    .backfill_progress(&BackfillProgressParams {
                        run_id: run.run_id(),
                        batches: last.batches,
                        rows: last.rows,
                        last_cursor: last.cursor.clone(),
                        now: run.now(),
                    })
                    .await
                    .map_err(|e| (e, last.clone()))?;
            }
            run.progress(last.rows, 0, None)
                .await
                .map_err(|e| (e, last.clone()))?;
        }
        if last.done {
            break;
        }
    }
    Ok(last)
}

/// Whether `error` ends the pass for good (its ledger row settles `failed`): not a park, a
/// cancel or a lost lease, and terminal or on the last attempt. Otherwise a retry adopts the
/// row. Consumers' laps judge their rows the same way.
pub(crate) fn ends_for_good(run: &Run, error: &JobError) -> bool {
    run.suspended_until().is_none()
        && !run.is_cancelled()
        && (error.class() == ErrorClass::Terminal || run.final_attempt())
        && !error.is(ErrorCode::JobLeaseLost)
}

/// `environments = [..]`: a pass runs only in one of them (`X_BACKFILL_ENVIRONMENT`, before
/// anything is recorded).
pub(crate) fn check_environment(
    d: &super::BackfillDescriptor,
    environment: Option<&str>,
) -> Result<(), JobError> {
    if d.runs_in(environment) {
        return Ok(());
    }
    let here = environment.map_or_else(|| "no environment".to_string(), |e| format!("`{e}`"));
    Err(JobError::new(
        ErrorCode::BackfillEnvironment,
        format!(
            "backfill `{}` runs only in {}; this process runs in {here}",
            d.name,
            d.environments.join(", ")
        ),
    )
    .with_fix(
        "run it where it is declared to run, name this process's environment          (`Jobs::in_environment` or JOBS_ENVIRONMENT), or add it to `environments`",
    ))
}

/// `count = <fn>`: after the last page, the rows still to do must be none
/// (`X_BACKFILL_STALLED`); a negative count is `X_INVARIANT`.
/// The count's [`Pass`] names the page after the last one.
async fn check_count<B: Backfill>(run: &Run, pages: u64) -> Result<(), JobError> {
    let d = B::BACKFILL;
    let Some(count) = B::count(Pass::new(run.clone(), d.name, pages)) else {
        return Ok(());
    };
    match count.await? {
        0 => Ok(()),
        left if left < 0 => Err(JobError::new(
            ErrorCode::Invariant,
            format!(
                "the `count` of backfill `{}` answered {left}, below zero",
                d.name
            ),
        )
        .with_fix("answer the number of rows still to do: zero or more")),
        left => Err(JobError::new(
            ErrorCode::BackfillStalled,
            format!(
                "backfill `{}` swept every page, yet its `count` still finds {left} row(s) to do",
                d.name
            ),
        )
        .with_fix(
            "make the source read every row the count counts (the same predicate), or the \
             handler change every row it is given; then enqueue the pass with `force`",
        )),
    }
}

fn check_tenant(
    name: &str,
    tenant: BackfillTenant,
    request: &BackfillRequest,
) -> Result<(), JobError> {
    let named = request
        .tenant
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty());
    match (tenant, named, &request.tenant) {
        (BackfillTenant::PerTenant, false, _) => Err(JobError::new(
            ErrorCode::JobTenantRequired,
            format!("backfill `{name}` is declared `tenant = per_tenant`: a pass names its tenant"),
        )
        .with_fix("enqueue it with `enqueue_for(&jobs, tenant)`")),
        (BackfillTenant::None, _, Some(_)) => Err(JobError::new(
            ErrorCode::JobDeclarationInvalid,
            format!("backfill `{name}` is declared `tenant = none`: a pass sweeps every tenant and takes none"),
        )
        .with_fix("enqueue it without a tenant, or declare it `tenant = per_tenant`")),
        _ => Ok(()),
    }
}
