//! Sleeps and event waits: steps that park the run (`sleep:<duration>`, `wait:<event>`) until
//! a time or an event, and the suspension they leave on the attempt.

use serde::de::DeserializeOwned;

use super::Run;
use crate::clock::{add, Timestamp};
use crate::driver::{EventFindParams, EventSince, StepRecord, StepStatus, WaitSpec};
use crate::duration::IntoDuration;
use crate::error::{ErrorCode, JobError};

impl Run {
    /// Suspends the run for `duration` without holding a worker or spending an attempt;
    /// `"3d"` is safe. Returns `Ok` once the time has passed (on a later attempt).
    ///
    /// The step is named `sleep:<duration>`; later sleeps of the same length in one run are
    /// `sleep:<duration>#2`, `#3`...
    ///
    /// A string literal (`run.sleep("3 fortnights")`, `"0s"`) is checked by `#[job]` at compile
    /// time; a computed duration that does not parse or is zero fails the run for good with
    /// `X_INVARIANT`, naming `run.sleep`.
    pub async fn sleep(&self, duration: impl IntoDuration) -> Result<(), JobError> {
        let duration = duration
            .try_into_duration()
            .map_err(|e| e.into_call_error("run.sleep", "duration"))?;
        let name = self.derived_name(&format!("sleep:{}", humantime::format_duration(duration)));
        let previous = self.enter(&name)?;
        let now = self.now();
        match previous {
            Some(r) if r.status == StepStatus::Completed => Ok(()),
            Some(r) if r.status == StepStatus::Sleeping => {
                let wake_at = r.wake_at.unwrap_or(now);
                if now >= wake_at {
                    self.write(&name, r.attempts, |r| r.status = StepStatus::Completed)
                        .await
                } else {
                    Err(self.suspend(wake_at))
                }
            }
            _ => {
                let wake_at = add(now, duration);
                self.write(&name, 1, |r| {
                    r.status = StepStatus::Sleeping;
                    r.wake_at = Some(wake_at);
                })
                .await?;
                Err(self.suspend(wake_at))
            }
        }
    }

    /// Suspends the run until an event `event` is published under `key` (see
    /// `Jobs::publish_event`), or `timeout` passes. Answers the event's payload, or `None` on
    /// timeout. Only events published after the wait began are its own. A payload that does not
    /// parse as `T` is `X_JOB_EVENT_INVALID` (terminal); a name or key over its limit in
    /// [`crate::limits`] is `X_LIMIT_EXCEEDED`. A literal `timeout` is checked by `#[job]` at
    /// compile time; a computed one that does not parse or is zero fails the run for good with
    /// `X_INVARIANT`, naming `run.wait_for_event`.
    pub async fn wait_for_event<T: DeserializeOwned>(
        &self,
        event: &str,
        key: &str,
        timeout: impl IntoDuration,
    ) -> Result<Option<T>, JobError> {
        let timeout = timeout
            .try_into_duration()
            .map_err(|e| e.into_call_error("run.wait_for_event", "timeout"))?;
        crate::limits::check_event_address(event, key)?;
        let name = self.derived_name(&format!("wait:{event}"));
        let previous = self.enter(&name)?;
        let now = self.now();
        let wait = match previous {
            Some(r) if r.status == StepStatus::Completed => {
                return decode_event(event, r.output);
            }
            Some(StepRecord {
                status: StepStatus::Waiting,
                wait: Some(wait),
                ..
            }) => wait,
            _ => {
                let wait = WaitSpec {
                    event: event.to_string(),
                    key: key.to_string(),
                    deadline: add(now, timeout),
                    since: EventSince {
                        at: now,
                        mark: self.inner.seed.driver.event_mark().await?,
                    },
                };
                let stored = wait.clone();
                self.write(&name, 1, |r| {
                    r.status = StepStatus::Waiting;
                    r.wait = Some(stored);
                })
                .await?;
                wait
            }
        };
        if let Some(found) = self
            .inner
            .seed
            .driver
            .event_find(&EventFindParams {
                name: &wait.event,
                key: &wait.key,
                since: &wait.since,
                now,
            })
            .await?
        {
            let payload = found.payload;
            let decoded = decode_event(event, Some(payload.clone()))?;
            self.write(&name, 1, |r| {
                r.status = StepStatus::Completed;
                r.output = Some(payload);
                r.wait = None;
            })
            .await?;
            return Ok(decoded);
        }
        if now >= wait.deadline {
            self.write(&name, 1, |r| {
                r.status = StepStatus::Completed;
                r.output = None;
                r.wait = None;
            })
            .await?;
            return Ok(None);
        }
        let poll = add(now, self.inner.seed.descriptor.event_poll);
        Err(self.suspend(wait.deadline.min(poll)))
    }

    /// When a sleep or a wait asked the run to park.
    pub(crate) fn suspended_until(&self) -> Option<Timestamp> {
        self.state().suspend_until
    }

    /// The group of children a parked invoke awaits.
    pub(crate) fn awaiting(&self) -> Option<crate::driver::GroupId> {
        self.state().awaiting
    }

    pub(crate) fn derived_name(&self, base: &str) -> String {
        let mut state = self.state();
        let count = state.derived.entry(base.to_string()).or_insert(0);
        *count += 1;
        match *count {
            1 => base.to_string(),
            n => format!("{base}#{n}"),
        }
    }

    pub(super) fn suspend(&self, until: Timestamp) -> JobError {
        self.state().suspend_until = Some(until);
        suspension_error(until)
    }

    /// Parks the run until `until` on a group of children it awaits (an invoke): the worker
    /// asks the store to wake it once the park is written, should the group be done by then.
    pub(crate) fn park_on(&self, group: crate::driver::GroupId, until: Timestamp) -> JobError {
        self.state().awaiting = Some(group);
        self.suspend(until)
    }
}

pub(super) fn suspension_error(until: Timestamp) -> JobError {
    JobError::retryable(format!("the run is suspended until {until}"))
}

fn decode_event<T: DeserializeOwned>(
    event: &str,
    payload: Option<serde_json::Value>,
) -> Result<Option<T>, JobError> {
    payload
        .map(|p| {
            serde_json::from_value(p).map_err(|e| {
                JobError::new(
                    ErrorCode::JobEventInvalid,
                    format!(
                        "event `{event}` does not match the type the wait asks for: {}",
                        crate::error::redact_serde(&e)
                    ),
                )
            })
        })
        .transpose()
}
