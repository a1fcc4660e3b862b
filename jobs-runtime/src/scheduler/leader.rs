//! One leader per fleet: an expiring lease row, acquired and renewed by the same call.
//!
//! The lease holds for `ttl` (30 s by default) and is renewed every `ttl / 3` (10 s). Between
//! renewals "am I still leading?" is answered from memory; a standby asks for the lease every
//! `ttl / 3`, not every round. A lost lease is logged once (`jobs.scheduler.leadership-lost`)
//! and the scheduler keeps polling as a standby.

use std::time::Duration;

use crate::clock::{add, Timestamp};
use crate::driver::scheduler_store::{SchedulerLeadParams, SchedulerStore};

/// The lease's default time to live.
pub const DEFAULT_LEADER_TTL: Duration = Duration::from_secs(30);
/// Renewals per TTL: a lease survives two missed renewals.
pub const LEASE_RENEWALS_PER_TTL: u32 = 3;

#[derive(Debug)]
pub(crate) struct Leader {
    pub holder: String,
    pub ttl: Duration,
    pub leading: bool,
    renewed_at: Option<Timestamp>,
    asked_at: Option<Timestamp>,
}

/// What asking changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    None,
    Promoted,
    Lost,
}

impl Leader {
    pub(crate) fn new(holder: String, ttl: Duration) -> Self {
        Leader {
            holder,
            ttl,
            leading: false,
            renewed_at: None,
            asked_at: None,
        }
    }

    pub(crate) fn renew_every(&self) -> Duration {
        self.ttl / LEASE_RENEWALS_PER_TTL
    }

    /// Whether the store must be asked at `now` (else the answer is `self.leading`).
    pub(crate) fn must_ask(&self, now: Timestamp) -> bool {
        let since = if self.leading {
            self.renewed_at
        } else {
            self.asked_at
        };
        since.is_none_or(|at| now >= add(at, self.renew_every()))
    }

    /// Asks the store (acquire IS renew) and records the answer.
    pub(crate) async fn ask(&mut self, store: &dyn SchedulerStore, now: Timestamp) -> Change {
        self.asked_at = Some(now);
        let was = self.leading;
        let params = SchedulerLeadParams {
            holder: self.holder.clone(),
            ttl: self.ttl,
            now,
        };
        match store.scheduler_lead(&params).await {
            Ok(true) => {
                self.leading = true;
                self.renewed_at = Some(now);
            }
            Ok(false) => self.leading = false,
            Err(error) => {
                // The lease still holds until its TTL from the last renewal.
                self.leading = was && self.renewed_at.is_some_and(|at| now < add(at, self.ttl));
                tracing::warn!(
                    target: "jobs.scheduler.lead-failed",
                    holder = %self.holder,
                    code = error.code().map(|c| c.as_str()),
                    "asking for the scheduler lease failed"
                );
            }
        }
        match (was, self.leading) {
            (false, true) => {
                tracing::info!(target: "jobs.scheduler.leading", holder = %self.holder);
                Change::Promoted
            }
            (true, false) => {
                tracing::warn!(
                    target: "jobs.scheduler.leadership-lost",
                    holder = %self.holder,
                    "this scheduler lost the lease; standing by"
                );
                Change::Lost
            }
            _ => Change::None,
        }
    }
}
