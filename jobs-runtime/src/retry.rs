//! Retry delays: the backoff curve, jitter, and the delay an error states.

use std::time::Duration;

use rand::Rng;

use crate::descriptor::{Backoff, Jitter, RetryPolicy};
use crate::error::ErrorClass;

/// The delay before the retry that follows failed attempt `attempt` (counting from 1), before
/// jitter: `fixed` = delay, `linear` = delay x attempt, `exponential` = delay x 2^(attempt-1),
/// each capped at `max_delay`.
///
/// ```
/// use jobs::{retry::backoff_delay, RetryPolicy};
/// use std::time::Duration;
///
/// let policy = RetryPolicy { attempts: 5, ..RetryPolicy::DEFAULT };
/// let delays: Vec<_> = (1..5).map(|a| backoff_delay(&policy, a)).collect();
/// assert_eq!(delays, [1, 2, 4, 8].map(Duration::from_secs));
/// ```
pub fn backoff_delay(policy: &RetryPolicy, attempt: u32) -> Duration {
    let attempt = attempt.max(1);
    let raw = match policy.backoff {
        Backoff::Fixed => policy.delay,
        Backoff::Linear => policy.delay.saturating_mul(attempt),
        Backoff::Exponential => {
            let factor = 2u32.checked_pow(attempt - 1).unwrap_or(u32::MAX);
            policy.delay.saturating_mul(factor)
        }
    };
    raw.min(policy.max_delay)
}

/// The un-jittered delays between the attempts of a policy (`attempts - 1` of them).
pub fn retry_schedule(policy: &RetryPolicy) -> Vec<Duration> {
    (1..policy.attempts)
        .map(|a| backoff_delay(policy, a))
        .collect()
}

/// The un-jittered delays still ahead of a stored job, one per retry it may yet get (what
/// `jobs show` prints): none for a finished job; for a running one, the delays after its
/// current attempt `attempt` and each later one; for one waiting to start (ready, delayed,
/// suspended: its next claim makes the attempt `attempt + 1`), from that attempt on. The row's
/// `max_attempts` bounds them, the policy's curve sets them.
///
/// ```
/// use jobs::{retry::remaining_delays, JobState, RetryPolicy};
/// use std::time::Duration;
///
/// let policy = RetryPolicy { attempts: 5, ..RetryPolicy::DEFAULT };
/// // Backing off after its first attempt failed: attempts 2, 3 and 4 may still fail and retry.
/// let left = remaining_delays(&policy, JobState::Ready, 1, 5);
/// assert_eq!(left, [2, 4, 8].map(Duration::from_secs));
/// assert!(remaining_delays(&policy, JobState::Dead, 5, 5).is_empty());
/// ```
pub fn remaining_delays(
    policy: &RetryPolicy,
    state: crate::driver::JobState,
    attempt: u32,
    max_attempts: u32,
) -> Vec<Duration> {
    use crate::driver::JobState;
    let next_failing = match state {
        JobState::Running => attempt.max(1),
        JobState::Ready | JobState::Delayed | JobState::Suspended => attempt + 1,
        _ => return Vec::new(),
    };
    (next_failing..max_attempts)
        .map(|a| backoff_delay(policy, a))
        .collect()
}

/// Applies jitter: `full` draws from `[0, d]`, `equal` from `[d/2, d]`, `none` keeps `d`.
pub fn jittered(delay: Duration, jitter: Jitter, rng: &mut impl Rng) -> Duration {
    match jitter {
        Jitter::None => delay,
        Jitter::Full => delay.mul_f64(rng.random::<f64>()),
        Jitter::Equal => delay / 2 + (delay / 2).mul_f64(rng.random::<f64>()),
    }
}

/// The delay before retrying an attempt that failed with `class`: a stated delay (clamped by
/// `max_delay`, plus up to a tenth of it so a throttled burst does not come back in lockstep,
/// unless jitter is `none`), or the jittered backoff. A retry-after class that states no delay
/// (a retry-after code such as `X_RATE_LIMITED` returned without
/// [`JobError::with_retry_after`](crate::JobError::with_retry_after)) gets the backoff.
pub fn retry_delay(policy: &RetryPolicy, attempt: u32, class: ErrorClass) -> Duration {
    crate::entropy::with_rng(|mut rng| match class {
        ErrorClass::RetryAfter(stated) if !stated.is_zero() => {
            let base = stated.min(policy.max_delay);
            match policy.jitter {
                Jitter::None => base,
                _ => base + (base / 10).mul_f64(rng.random::<f64>()),
            }
        }
        _ => jittered(backoff_delay(policy, attempt), policy.jitter, &mut rng),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(backoff: Backoff) -> RetryPolicy {
        RetryPolicy {
            attempts: 5,
            backoff,
            delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(5),
            jitter: Jitter::None,
        }
    }

    #[test]
    fn curves_match_the_reference_and_cap_at_max_delay() {
        let secs = |p: RetryPolicy| -> Vec<u64> {
            retry_schedule(&p).iter().map(|d| d.as_secs()).collect()
        };
        assert_eq!(secs(policy(Backoff::Fixed)), [1, 1, 1, 1]);
        assert_eq!(secs(policy(Backoff::Linear)), [1, 2, 3, 4]);
        assert_eq!(secs(policy(Backoff::Exponential)), [1, 2, 4, 5]);
    }

    #[test]
    fn the_remaining_delays_follow_the_attempt_the_row_is_at() {
        use crate::driver::JobState;
        let p = policy(Backoff::Exponential);
        let secs = |state, attempt| -> Vec<u64> {
            remaining_delays(&p, state, attempt, 5)
                .iter()
                .map(|d| d.as_secs())
                .collect()
        };
        // Never run: every retry is ahead.
        assert_eq!(secs(JobState::Ready, 0), [1, 2, 4, 5]);
        // Running its second attempt: the retries after attempts 2, 3 and 4.
        assert_eq!(secs(JobState::Running, 2), [2, 4, 5]);
        // Backing off after attempt 2: attempt 3 is next.
        assert_eq!(secs(JobState::Delayed, 2), [4, 5]);
        // On its last attempt, or finished: none.
        assert!(secs(JobState::Running, 5).is_empty());
        assert!(secs(JobState::Done, 1).is_empty());
    }

    #[test]
    fn exponential_never_overflows() {
        let p = RetryPolicy {
            attempts: 200,
            ..RetryPolicy::DEFAULT
        };
        assert_eq!(backoff_delay(&p, 150), p.max_delay);
    }

    #[test]
    fn jitter_stays_in_its_band() {
        let mut rng = rand::rng();
        let d = Duration::from_secs(10);
        for _ in 0..1000 {
            let full = jittered(d, Jitter::Full, &mut rng);
            assert!(full <= d);
            let equal = jittered(d, Jitter::Equal, &mut rng);
            assert!(equal >= d / 2 && equal <= d);
            assert_eq!(jittered(d, Jitter::None, &mut rng), d);
        }
    }

    #[test]
    fn stated_delay_is_clamped_by_max_delay() {
        let p = policy(Backoff::Fixed);
        let d = retry_delay(&p, 1, ErrorClass::RetryAfter(Duration::from_secs(3600)));
        assert_eq!(d, p.max_delay);
    }

    #[test]
    fn a_retry_after_class_without_a_delay_gets_the_backoff() {
        let p = policy(Backoff::Linear);
        let d = retry_delay(&p, 3, ErrorClass::RetryAfter(Duration::ZERO));
        assert_eq!(d, backoff_delay(&p, 3));
    }
}
