-- fragment_enqueue_insert: spliced where a statement names enqueue_insert (in braces): one job's
-- row, unless a row holds its (name, tenant, key) in the live-key index or its id (no target:
-- every unique index is an arbiter), numbered as job_enqueue.sql says ($1 to $14). A job due at
-- `now` ($10) or before is `ready`, a later one `delayed`.
insert into {schema}.x_jobs (
    id, run_id, name, queue, input, idempotency_key, tenant_id, state,
    max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until
)
values (
    $1, $2, $3, $4, $5, $6, $7,
    case when $9 <= $10 then 'ready' else 'delayed' end,
    $8, $9, $10, $10, $11, $12, $13, $14
)
on conflict do nothing
