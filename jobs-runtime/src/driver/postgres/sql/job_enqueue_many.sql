-- job_enqueue_many: inserts a batch in ONE statement, with job_enqueue's rules. $1..$10 are
-- arrays with one element per job, in the batch's order; $11 is now; $12 the wake channel.
-- A row whose id names a row, or whose (name, tenant, key) a live row holds, inserts nothing
-- and answers that row (deduped); a key repeated inside the batch answers its first
-- occurrence. A row whose holder committed after the statement began answers nulls, and the
-- caller enqueues it again on its own. Each queue that received a row due within a second is
-- announced once on the wake channel.
with input as (
    select *
    from unnest(
        $1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[],
        $8::int[], $9::timestamptz[], $10::text[]
    ) with ordinality as r(
        id, run_id, name, queue, input, idempotency_key, tenant_id,
        max_attempts, run_at, traceparent, ord
    )
),
inserted as (
    insert into {schema}.x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, traceparent
    )
    select id, run_id, name, queue, input, idempotency_key, tenant_id,
           case when run_at <= $11 then 'ready' else 'delayed' end,
           max_attempts, run_at, $11, $11, traceparent
    from input
    order by ord
    on conflict do nothing
    returning id, run_id, name, queue, tenant_id, idempotency_key, run_at
)
select r.ord,
       coalesce(ins.id, dup.id, by_id.id, live.id) as id,
       coalesce(ins.run_id, dup.run_id, by_id.run_id, live.run_id) as run_id,
       ins.id is null as deduped,
       (
           select count(*)
           from (
               select pg_notify($12, q.queue)
               from (select distinct queue from inserted where run_at <= $11 + interval '1 second') q
           ) n
       ) as announced
from input r
left join inserted ins on ins.id = r.id
left join lateral (
    select i.id, i.run_id
    from inserted i
    where ins.id is null
      and i.name = r.name
      and coalesce(i.tenant_id, '') = coalesce(r.tenant_id, '')
      and i.idempotency_key = r.idempotency_key
    limit 1
) dup on true
left join lateral (
    select j.id, j.run_id
    from {schema}.x_jobs j
    where ins.id is null and dup.id is null and j.id = r.id
) by_id on true
left join lateral (
    select j.id, j.run_id
    from {schema}.x_jobs j
    where ins.id is null and dup.id is null and by_id.id is null
      and j.name = r.name
      and coalesce(j.tenant_id, '') = coalesce(r.tenant_id, '')
      and j.idempotency_key = r.idempotency_key
      and j.state in ('ready', 'delayed', 'running', 'suspended')
    limit 1
) live on true
order by r.ord
