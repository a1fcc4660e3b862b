-- job_enqueue_many: inserts a batch in ONE plain statement, taking for granted that no job of
-- it is held already: $1..$10, $13, $14 (priorities) and $15 (each row's unique_until, null:
-- no unique period) are arrays with one element per job, in the batch's order; $11 is now; $12
-- the wake channel. A row whose id names a row, or whose (name, tenant, key) a row of the
-- live-key index (live, or with a unique period's mark) or an earlier row of the batch holds,
-- is a unique violation that aborts the batch's transaction; the driver then redoes the whole batch with job_enqueue_many_dedupe,
-- which answers each held job. No speculative insertion and nothing read back for the common
-- case of a batch of new jobs: one row answers how many went in, and announces, once, each
-- queue that received a row due within a second.
with input as (
    select *
    from unnest(
        $1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[],
        $8::int[], $9::timestamptz[], $10::text[], $13::text[], $14::smallint[],
        $15::timestamptz[]
    ) with ordinality as r(
        id, run_id, name, queue, input, idempotency_key, tenant_id,
        max_attempts, run_at, traceparent, actor, priority, unique_until, ord
    )
),
inserted as (
    insert into {schema}.x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent, actor, priority, unique_until
    )
    select id, run_id, name, queue, input, idempotency_key, tenant_id,
           case when run_at <= $11 then 'ready' else 'delayed' end,
           max_attempts, run_at, $11, $11, traceparent, actor, priority, unique_until
    from input
    order by ord
    returning queue, run_at
)
select (select count(*) from inserted) as inserted,
       (
           select count(*)
           from (
               select pg_notify($12, q.queue)
               from (select distinct queue from inserted where run_at <= $11) q
               union all
               select pg_notify($12, {due_payload})
               from (select queue, min(run_at) as run_at from inserted where run_at > $11 group by queue) d
           ) n
       ) as announced
