-- outbox_stage: stages one job on the caller's transaction, and announces it on the outbox's wake channel
-- (delivered at COMMIT) unless a committed row already waits unclaimed: the relay is then
-- already due to pass, and a burst of stages costs one notification. Unclaimed: after the
-- last row of the lease holder's latest claim, or any row while no relay holds the lease.
with staged as (
    insert into {schema}.x_outbox (id, run_id, name, queue, input, idempotency_key, tenant_id,
        max_attempts, run_at, on_conflict, traceparent, actor, staged_at, priority, unique_for_ms)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15, $16)
), lease as (
    select last_staged_at, last_id from {schema}.x_outbox_lease
    where id = 1 and claimed_by is not null
)
select pg_notify($14, '')
where not exists (
    select 1 from {schema}.x_outbox o
    where o.published_at is null and o.refused_at is null
      and not exists (select 1 from lease)
) and not exists (
    select 1 from lease, {schema}.x_outbox o
    where o.published_at is null and o.refused_at is null
      and (o.staged_at, o.id) > (lease.last_staged_at, lease.last_id)
)
