-- job_enqueue_dependent: a job with dependencies, inside the driver's transaction that locked
-- them (dependency_lock.sql) and judged where it starts: $12 its state ('suspended' until
-- $9 = 9999-12-31 while a dependency is live, 'cancelled' when one failed and its policy
-- cancels, else 'ready'), $17/$18 the error a cancelled one carries, $19 its policy. Inserts
-- unless a row holds its (name, tenant, key) in the live-key index or its id names a row, as
-- job_enqueue_in does (the transaction must not fail); answers the new row's ids, or nothing.
-- A ready one announces its queue (dependents are few: no throttle).
insert into {schema}.x_jobs (
    id, run_id, name, queue, input, idempotency_key, tenant_id, state,
    max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until,
    last_error, last_error_code, on_dependency_failure
)
values (
    $1, $2, $3, $4, $5, $6, $7, $12,
    $8, $9, $10, $10, $13, $14, $15, $16,
    $17, $18, $19
)
on conflict do nothing
returning id, run_id,
    case when state = 'ready' then (select true from pg_notify($11, $4)) end as woke
