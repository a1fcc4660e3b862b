-- job_enqueue_announced: job_enqueue with its wake announcement ($15 the wake channel), for a
-- job due later (every one: its due time, fragment_due_payload.sql, so an idle worker starts it
-- when due) and for a job due now that is the first of its queue in announce.rs' window (its
-- queue). Answers the new row, or nothing when it inserted nothing (then nothing is announced).
-- The payload is the queue name or a due time, never an id, an input or a tenant.
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
returning
    case
        when run_at > $10 then (select true from pg_notify($15, {due_payload}))
        else (select true from pg_notify($15, $4))
    end as woke
