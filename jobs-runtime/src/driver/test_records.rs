//! Port records for the crate's own unit tests: a due enqueue request and a claim of one job.

use std::time::Duration;

use crate::clock::Timestamp;
use crate::driver::{ClaimParams, ConflictPolicy, EnqueueRequest, QueueDemand};

/// A due request for `held.job` under the key `held` on `default`, made at `now`.
pub(crate) fn request(now: Timestamp) -> EnqueueRequest {
    EnqueueRequest {
        id: crate::entropy::new_id(),
        run_id: crate::entropy::new_id(),
        name: "held.job".to_string(),
        queue: "default".to_string(),
        input: serde_json::json!({}),
        idempotency_key: "held".to_string(),
        tenant_id: None,
        max_attempts: 3,
        run_at: now,
        priority: 0,
        on_conflict: ConflictPolicy::Dedupe,
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now,
    }
}

/// A claim of one job from `default` by worker `w`, at `now`.
pub(crate) fn claim_one(now: Timestamp) -> ClaimParams {
    ClaimParams {
        demand: vec![QueueDemand {
            queue: "default".to_string(),
            limit: 1,
        }],
        worker_id: "w".into(),
        visibility_timeout: Duration::from_secs(30),
        drop_exhausted: Vec::new(),
        fair_after: String::new(),
        now,
    }
}
