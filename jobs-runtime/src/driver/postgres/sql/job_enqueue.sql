-- job_enqueue: the enqueue in the driver's own one-statement transaction, announcing nothing:
-- a job due now whose queue this process announced within the last 25 ms (announce.rs decides;
-- job_enqueue_announced is the same insert with its announcement). Inserts the job unless a row
-- holds its (name, tenant, key) in the live-key index (a live row, or one with a unique
-- period's mark, lapsed or not) or its id already names a row (an outbox re-publish); the
-- caller reads the count: none inserted, it asks job_enqueue_holder which row holds the job
-- (which also clears a lapsed mark, so the next round inserts).
--
-- "on conflict do nothing" without a target covers both the primary key and the partial unique
-- index x_jobs_name_tenant_idempotency_live_idx; its pre-check probes the live key as a
-- "where not exists" would, at a little less (measured with pgbench, statements interleaved:
-- 0.218 ms against 0.221 for the probe, 0.213 for neither), and a key taken meanwhile is
-- nothing inserted, not a failed statement. Nothing is returned: a RETURNING cost about 10 us
-- of server time a call (0.233 ms against 0.221), and the caller knows the ids it sent.
--
-- $1 id, $2 run id, $3 name, $4 queue, $5 input, $6 key, $7 tenant, $8 max attempts, $9 run
-- at, $10 now, $11 traceparent, $12 actor, $13 priority, $14 the new row's unique_until (its
-- creation plus its period; null: none). Every enqueue statement numbers them so.
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
