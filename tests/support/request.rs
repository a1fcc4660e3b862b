//! A store-level enqueue request, for the cases that talk to a driver's port directly.

use jobs::clock::Timestamp;
use jobs::driver::{ConflictPolicy, EnqueueRequest, DEFAULT_PRIORITY};
use uuid::Uuid;

/// A request for job `name` under `key` on `queue` (input `{"key": key}`, 3 attempts, the
/// default priority, deduplicated on its key), made at `now` to run at `run_at`.
pub fn request(
    name: &str,
    queue: &str,
    key: &str,
    run_at: Timestamp,
    now: Timestamp,
) -> EnqueueRequest {
    EnqueueRequest {
        id: Uuid::now_v7(),
        run_id: Uuid::now_v7(),
        name: name.into(),
        queue: queue.into(),
        input: serde_json::json!({ "key": key }),
        idempotency_key: key.into(),
        tenant_id: None,
        max_attempts: 3,
        run_at,
        priority: DEFAULT_PRIORITY,
        on_conflict: ConflictPolicy::Dedupe,
        traceparent: None,
        actor: None,
        unique_for: None,
        dependencies: None,
        now,
    }
}
