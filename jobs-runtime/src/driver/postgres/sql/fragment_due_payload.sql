-- fragment_due_payload: spliced where a statement names due_payload (in braces): the wake
-- payload announcing that a row of `queue` is due at `run_at`, `@<microseconds since the
-- epoch, rounded up>:<queue>` (wake.rs reads it; a queue name holds no `@` or `:`). Rounded
-- up, so a timer armed on it never fires before the row is claimable. Never an id, an input
-- or a tenant.
'@' || ceil(extract(epoch from run_at) * 1000000)::bigint::text || ':' || queue
