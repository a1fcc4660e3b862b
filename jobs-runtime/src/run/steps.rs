//! [`Run::step`] and the step records under it: claiming a name for the attempt, replaying a
//! completed step's output, and writing a record fenced on the claim.

use std::future::Future;

use serde::{de::DeserializeOwned, Serialize};

use super::waits::suspension_error;
use super::{Run, MAX_TRACE_NAMES};
use crate::driver::{StepPutParams, StepRecord, StepStatus};
use crate::error::{ErrorCode, JobError};

impl Run {
    /// Runs `work` once, ever, for this run: its output is stored before `step` returns, and
    /// a later attempt gets the stored output back without running `work` again.
    ///
    /// Names must be unique within a run (`X_STEP_DUPLICATE`) and within
    /// [`MAX_STEP_NAME_BYTES`](crate::limits::MAX_STEP_NAME_BYTES) (`X_LIMIT_EXCEEDED`); an
    /// output must serialize and hold no NUL character (`X_STEP_OUTPUT_UNSERIALIZABLE`) and own
    /// its data: it is read back on a later attempt, so a step answers `String`, not `&str`
    /// (`#[job]` refuses a borrowed output it can see, such as `Ok("text")`; elsewhere rustc
    /// says "`Deserialize` is not general enough"). With `step_timeout` declared, `work` is dropped after
    /// it and the step fails with `X_JOB_TIMEOUT`.
    pub async fn step<T, E, F>(&self, name: &str, work: F) -> Result<T, JobError>
    where
        T: Serialize + DeserializeOwned,
        E: Into<JobError>,
        F: Future<Output = Result<T, E>>,
    {
        let previous = self.enter(name)?;
        if let Some(record) = &previous {
            if record.status == StepStatus::Completed {
                return decode_output(name, record.output.clone());
            }
        }
        self.refuse_if_cancelled()?;
        self.refuse_if_claim_lapsed(name)?;
        let attempts = previous.as_ref().map_or(0, |r| r.attempts) + 1;
        let work = crate::telemetry::step(self.job_name(), name, attempts, work);
        let result = match self.inner.seed.descriptor.step_timeout {
            Some(ceiling) => {
                tokio::select! {
                    biased;
                    r = work => r.map_err(Into::into),
                    _ = self.inner.seed.clock.sleep(ceiling) => Err(JobError::new(
                        ErrorCode::JobTimeout,
                        format!("step `{name}` outran its step_timeout of {}", humantime::format_duration(ceiling)),
                    )),
                }
            }
            None => work.await.map_err(Into::into),
        };
        if let Some(observer) = &self.inner.seed.observer {
            observer.step_executed(self.inner.seed.job_id, self.inner.seed.run_id, name);
        }
        match result {
            Ok(value) => {
                let output = serde_json::to_value(&value).map_err(|e| {
                    JobError::new(
                        ErrorCode::StepOutputUnserializable,
                        format!("the output of step `{name}` cannot be stored: {e}"),
                    )
                })?;
                crate::limits::check_step_output(self.job_name(), &output)?;
                self.write(name, attempts, |r| {
                    r.status = StepStatus::Completed;
                    r.output = Some(output);
                })
                .await?;
                Ok(value)
            }
            Err(error) => {
                if !self.is_cancelled() {
                    let summary = error.summary();
                    if let Err(unrecorded) = self
                        .write(name, attempts, |r| {
                            r.status = StepStatus::Failed;
                            r.error = Some(summary);
                        })
                        .await
                    {
                        // Bookkeeping must never mask the step's own error.
                        tracing::warn!(
                            target: "jobs.step.failure-unrecorded",
                            job_id = %self.inner.seed.job_id,
                            step = name,
                            code = unrecorded.code().map(|c| c.as_str()),
                            "a failed step could not be recorded"
                        );
                    }
                }
                Err(error)
            }
        }
    }

    /// Claims `name` for this attempt and answers its stored record, if any.
    pub(crate) fn enter(&self, name: &str) -> Result<Option<StepRecord>, JobError> {
        let job = self.inner.seed.descriptor.name;
        crate::limits::check_text(crate::limits::STEP_NAME, &format!("job `{job}`"), name)?;
        let mut state = self.state();
        if let Some(until) = state.suspend_until {
            // The body ignored a suspension; nothing more runs in this attempt.
            return Err(suspension_error(until));
        }
        if !state.seen.insert(name.to_string()) {
            return Err(JobError::new(
                ErrorCode::StepDuplicate,
                format!(
                    "step `{name}` ran twice in one run of job `{}`",
                    self.inner.seed.descriptor.name
                ),
            ));
        }
        if state.trace.len() == MAX_TRACE_NAMES {
            state.trace.pop_front();
        }
        state.trace.push_back(name.to_string());
        Ok(state.stored.get(name).cloned())
    }

    /// A step does not start once the claim's window has passed by this attempt's clock (a
    /// paused process wakes with its renewals overdue): another worker may be running it.
    pub(crate) fn refuse_if_claim_lapsed(&self, name: &str) -> Result<(), JobError> {
        if self.inner.seed.claim_window.holds(self.now()) {
            return Ok(());
        }
        self.inner.seed.cancel.cancel();
        Err(JobError::new(
            ErrorCode::JobLeaseLost,
            format!(
                "job {} went a whole visibility window without a renewal landing; step `{name}` was not started",
                self.inner.seed.job_id
            ),
        ))
    }

    pub(crate) fn refuse_if_cancelled(&self) -> Result<(), JobError> {
        if self.is_cancelled() {
            return Err(JobError::new(
                ErrorCode::Aborted,
                format!(
                    "a cancelled attempt of job `{}` tried to write a step",
                    self.inner.seed.descriptor.name
                ),
            ));
        }
        Ok(())
    }

    /// Writes one step record, fenced on the claim.
    pub(crate) async fn write(
        &self,
        name: &str,
        attempts: u32,
        fill: impl FnOnce(&mut StepRecord),
    ) -> Result<(), JobError> {
        self.refuse_if_cancelled()?;
        let mut record = self
            .state()
            .stored
            .get(name)
            .cloned()
            .unwrap_or(StepRecord {
                run_id: self.inner.seed.run_id,
                name: name.to_string(),
                status: StepStatus::Failed,
                output: None,
                error: None,
                attempts: 0,
                wake_at: None,
                wait: None,
                updated_at: self.now(),
            });
        record.attempts = attempts;
        record.updated_at = self.now();
        fill(&mut record);
        if !self
            .inner
            .seed
            .driver
            .step_put(&StepPutParams {
                record: &record,
                fence: &self.inner.seed.fence,
            })
            .await?
        {
            return Err(JobError::new(
                ErrorCode::JobLeaseLost,
                format!(
                    "job {} no longer holds its claim; step `{name}` was not written",
                    self.inner.seed.job_id
                ),
            ));
        }
        self.state().stored.insert(name.to_string(), record);
        Ok(())
    }
}

fn decode_output<T: DeserializeOwned>(
    name: &str,
    output: Option<serde_json::Value>,
) -> Result<T, JobError> {
    serde_json::from_value(output.unwrap_or(serde_json::Value::Null)).map_err(|e| {
        JobError::new(
            ErrorCode::StepRecordInvalid,
            format!(
                "the stored output of step `{name}` no longer parses: {}",
                crate::error::redact_serde(&e)
            ),
        )
    })
}
