-- Stages one job on the caller's transaction, and announces it on the outbox's wake channel
-- (delivered at COMMIT) unless a committed row already waits unclaimed: the relay is then
-- already due to pass, and a burst of stages costs one notification.
with staged as (
    insert into {schema}.x_outbox (id, run_id, name, queue, input, idempotency_key, tenant_id,
        max_attempts, run_at, on_conflict, traceparent, actor, staged_at, priority, unique_for_ms)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15, $16)
)
select pg_notify($14, '')
where not exists (
    select 1 from {schema}.x_outbox
    where published_at is null and refused_at is null and claimed_by is null
)
