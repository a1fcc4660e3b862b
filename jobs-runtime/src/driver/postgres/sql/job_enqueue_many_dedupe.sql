-- job_enqueue_many_dedupe: inserts a batch in ONE statement, with job_enqueue's rules, when
-- job_enqueue_many met a conflict (the driver then redoes the batch with this statement).
-- $1..$10, $13, $14 (priorities) and $15 (unique_until) are arrays with one element per job, in
-- the batch's order; $11 is now; $12 the wake channel. A row whose id names a row, or whose
-- (name, tenant, key) a row holds (a live one, or a finished one inside its unique period),
-- inserts nothing and answers that row (deduped); a key repeated inside the batch answers its
-- first occurrence. A row whose holder committed after the statement began, or whose key a
-- finished row with a lapsed unique period still keeps in the index, answers nulls, and the
-- caller enqueues it again on its own (job_enqueue_holder clears the lapsed mark). Each queue that received a row due within a second is
-- announced once on the wake channel.
--
-- The answer is one summary row (ord null, carrying the announcement) and then one row per job
-- that was NOT inserted: the caller already knows the ids of the rows it inserted, so a batch
-- of new jobs reads back one row, not a thousand. The holder lookups are lateral with a limit,
-- so they run per missing row on an index and are never planned as a join over the whole table.
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
    on conflict do nothing
    returning id, run_id, name, queue, tenant_id, idempotency_key, run_at
),
missing as (
    select r.*
    from input r
    where not exists (select 1 from inserted i where i.id = r.id)
)
select null::bigint as ord, null::uuid as id, null::uuid as run_id,
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
union all
(
    select m.ord,
           coalesce(dup.id, by_id.id, live.id) as id,
           coalesce(dup.run_id, by_id.run_id, live.run_id) as run_id,
           null::bigint as announced
    from missing m
    left join lateral (
        select i.id, i.run_id
        from inserted i
        where i.name = m.name
          and coalesce(i.tenant_id, '') = coalesce(m.tenant_id, '')
          and i.idempotency_key = m.idempotency_key
        limit 1
    ) dup on true
    left join lateral (
        select j.id, j.run_id
        from {schema}.x_jobs j
        where dup.id is null and j.id = m.id
        limit 1
    ) by_id on true
    left join lateral (
        select j.id, j.run_id
        from {schema}.x_jobs j
        where dup.id is null and by_id.id is null
          and j.name = m.name
          and coalesce(j.tenant_id, '') = coalesce(m.tenant_id, '')
          and j.idempotency_key = m.idempotency_key
          and (j.state in ('ready', 'delayed', 'running', 'suspended') or j.unique_until > $11)
        limit 1
    ) live on true
    order by m.ord
)
