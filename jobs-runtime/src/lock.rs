//! `with_lock`: one holder fleet-wide, with a fencing token. A helper over the driver's lease
//! store (one slot under `lock:<key>`), not a new mechanism.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::Jobs;
use crate::clock::add;
use crate::driver::lease::{HeldLease, LeaseAcquire, LeaseStore};
use crate::driver::lease::{LeaseHoldersParams, LeaseRenewParams};
use crate::error::{ErrorCode, JobError};

/// How often a waiting `with_lock` asks again, at most (a tenth of the ttl when shorter).
const RETRY_EVERY_AT_MOST: Duration = Duration::from_millis(250);

/// What the closure of [`Jobs::with_lock`] receives.
#[derive(Debug, Clone)]
pub struct LockGuard {
    token: i64,
    lost: CancellationToken,
}

impl LockGuard {
    /// The fencing token: strictly larger than every earlier holder's. Write it beside the data
    /// the lock protects, and refuse a write carrying a smaller one.
    pub fn token(&self) -> i64 {
        self.token
    }

    /// Whether the lock was lost (a renewal refused, or none landed within the ttl).
    pub fn is_lost(&self) -> bool {
        self.lost.is_cancelled()
    }

    /// Resolves when the lock is lost: stop writing.
    pub async fn lost(&self) {
        self.lost.cancelled().await
    }
}

/// How [`Jobs::with_lock`] waits and holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockOptions {
    /// How long the key outlives a dead holder; renewed every third of it. Required.
    pub ttl: Duration,
    /// How long to wait for the lock (default: one ttl; zero: one try).
    pub wait: Option<Duration>,
}

impl LockOptions {
    /// A lock with this ttl, waiting up to one ttl for it.
    pub fn ttl(ttl: Duration) -> Self {
        LockOptions { ttl, wait: None }
    }

    /// Waits up to `wait` for the lock (zero: a single try).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }
}

impl Jobs {
    /// Runs `work` while holding `key` fleet-wide: one holder at a time across every process
    /// on this driver, renewed every third of the ttl.
    ///
    /// Fails with `X_LOCK_NOT_ACQUIRED` (naming the holder) when the lock stays held for the
    /// whole wait, with `X_LOCK_LOST` when a renewal is refused or none lands within the ttl
    /// (the guard's `lost()` fires and `work` is dropped), and with
    /// `X_LOCK_STORE_MISSING` on a driver with no lease store. A key over
    /// [`MAX_LOCK_KEY_BYTES`](crate::limits::MAX_LOCK_KEY_BYTES) is `X_LIMIT_EXCEEDED`, one
    /// holding a NUL `X_VALUE_UNSTORABLE`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), jobs::JobError> {
    /// use jobs::LockOptions;
    /// use std::time::Duration;
    ///
    /// let jobs = jobs::Jobs::memory();
    /// let token = jobs
    ///     .with_lock("nightly-report", LockOptions::ttl(Duration::from_secs(30)), |guard| async move {
    ///         // ... write guard.token() beside the report ...
    ///         Ok(guard.token())
    ///     })
    ///     .await?;
    /// assert!(token > 0);
    /// # Ok(()) }
    /// ```
    pub async fn with_lock<T, F, Fut>(
        &self,
        key: &str,
        options: LockOptions,
        work: F,
    ) -> Result<T, JobError>
    where
        F: FnOnce(LockGuard) -> Fut,
        Fut: Future<Output = Result<T, JobError>>,
    {
        crate::limits::check_text(crate::limits::LOCK_KEY, "a `with_lock`", key)?;
        if options.ttl.is_zero() {
            return Err(JobError::new(
                ErrorCode::Invariant,
                "with_lock needs a positive ttl: how long the key outlives a dead holder",
            ));
        }
        let Some(store) = self.driver().lease_store() else {
            return Err(JobError::new(
                ErrorCode::LockStoreMissing,
                format!(
                    "driver `{}` has no lease store to hold locks",
                    self.driver().name()
                ),
            ));
        };
        let lease = self.acquire_lock(store, key, options).await?;
        let lost = CancellationToken::new();
        let guard = LockGuard {
            token: lease.fence,
            lost: lost.clone(),
        };
        let renewer = self.keep_lock(lease.clone(), options.ttl, lost.clone());
        let result = tokio::select! {
            biased;
            result = work(guard) => result,
            // The renewer only returns once the lock is lost: the guard's `lost()` has fired,
            // and the work is dropped, since it no longer holds the lock.
            () = renewer => Err(lost_error(key)),
        };
        let was_lost = lost.is_cancelled();
        if let Err(error) = store.lease_release(&lease).await {
            tracing::warn!(
                target: "jobs.lock.unreleased",
                code = error.code().map(|c| c.as_str()),
                "a lock could not be released; it lapses with its ttl"
            );
        }
        if was_lost {
            return Err(lost_error(key));
        }
        result
    }

    async fn acquire_lock(
        &self,
        store: &dyn LeaseStore,
        key: &str,
        options: LockOptions,
    ) -> Result<HeldLease, JobError> {
        let clock = self.clock();
        let lease_key = format!("lock:{key}");
        let holder = crate::entropy::new_id().to_string();
        let deadline = add(clock.now(), options.wait.unwrap_or(options.ttl));
        let retry_every = (options.ttl / 10).clamp(Duration::from_millis(1), RETRY_EVERY_AT_MOST);
        loop {
            let now = clock.now();
            let asked = LeaseAcquire {
                key: lease_key.clone(),
                limit: 1,
                ttl: options.ttl,
                holder: holder.clone(),
                now,
            };
            if let Some(lease) = store.lease_acquire(&asked).await? {
                return Ok(lease);
            }
            if clock.now() >= deadline {
                let holders = store
                    .lease_holders(&LeaseHoldersParams {
                        key: &lease_key,
                        now: clock.now(),
                    })
                    .await?;
                let held_by = holders
                    .first()
                    .map(|h| h.holder.clone())
                    .unwrap_or_else(|| "a holder that just left".to_string());
                return Err(JobError::new(
                    ErrorCode::LockNotAcquired,
                    format!("lock `{key}` is held by {held_by}"),
                ));
            }
            clock
                .sleep_until(deadline.min(add(clock.now(), retry_every)))
                .await;
        }
    }

    /// Renews every third of the ttl; returns (and fires `lost`) once a renewal is refused or
    /// none has landed for a whole ttl. Never returns while the lock is held.
    async fn keep_lock(&self, lease: HeldLease, ttl: Duration, lost: CancellationToken) {
        let clock = self.clock().clone();
        let Some(store) = self.driver().lease_store() else {
            return std::future::pending().await;
        };
        let mut landed = clock.now();
        loop {
            clock.sleep(ttl / 3).await;
            // Decided before each call: a renewal landing after the ttl is late all the same.
            if clock.now() >= add(landed, ttl) {
                break;
            }
            match store
                .lease_renew(&LeaseRenewParams {
                    lease: &lease,
                    ttl,
                    now: clock.now(),
                })
                .await
            {
                Ok(Some(_)) => landed = clock.now(),
                Ok(None) => break,
                Err(error) => tracing::warn!(
                    target: "jobs.lock.renewal-failed",
                    code = error.code().map(|c| c.as_str()),
                    "a lock renewal failed; retrying within the ttl"
                ),
            }
        }
        lost.cancel();
    }
}

fn lost_error(key: &str) -> JobError {
    JobError::new(
        ErrorCode::LockLost,
        format!("lock `{key}` was lost while held"),
    )
}
