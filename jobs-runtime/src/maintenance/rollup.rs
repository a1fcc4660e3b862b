//! The counter roll-up: the leading scheduler folds the operator counters into their next tier
//! about once a minute (a driver without the operator surface has nothing to roll up).

use std::time::Duration;

use crate::client::Jobs;
use crate::clock::{add, Timestamp};
use crate::driver::introspect::CountersRollupParams;

/// The leader rolls the operator counters up about once a minute.
const COUNTER_ROLLUP_INTERVAL: Duration = Duration::from_secs(60);

/// When the counters were last rolled up, by this scheduler.
#[derive(Debug, Default)]
pub(crate) struct CounterRollup {
    last: Option<Timestamp>,
}

impl CounterRollup {
    /// Rolls the counters up when a minute has passed since the last time. A failure waits for
    /// the next minute; it never stops the caller's round.
    pub(crate) async fn when_due(&mut self, jobs: &Jobs, now: Timestamp) {
        if self
            .last
            .is_some_and(|at| now < add(at, COUNTER_ROLLUP_INTERVAL))
        {
            return;
        }
        self.last = Some(now);
        let Some(introspect) = jobs.driver().introspect() else {
            return;
        };
        if let Err(error) = introspect
            .counters_rollup(&CountersRollupParams { now })
            .await
        {
            tracing::warn!(
                target: "jobs.scheduler.rollup-failed",
                code = error.code().map(|c| c.as_str()),
                "the counter rollup failed; the next minute retries"
            );
        }
    }
}
