-- task_fire: ONE statement moves a task's watermark from the value the scheduler read ($2; null:
-- the task has no row yet) to $3 AND inserts the occurrence's jobs, only
-- "where exists (select 1 from moved)": a crash between the two is impossible, and of two
-- schedulers firing from one watermark only the first moves it (the second, blocked on the
-- row, re-checks the watermark after the first commits and moves nothing).
-- $4: the occurrence that dispatches, recorded as the last fire (null: arming or passing
-- missed occurrences, not a fire). $5: now.
-- The jobs ($6..$13, $15 (priorities) and $16 (unique_until, null: no unique period), one array
-- element per job, in declaration order) are inserted with the enqueue's rules: "on conflict do
-- nothing" covers the id and the live-key index x_jobs_name_tenant_idempotency_live_idx; a job
-- whose key a row holds (a live one, or a finished one inside its unique period) answers that
-- row with deduped = true. The driver clears the lapsed unique marks of the fire's keys first
-- (job_unique_lapse.sql), so no lapsed mark refuses an insert here. Every queue the occurrence filled is announced once on the wake channel
-- ($14); a refused fire announces nothing.
with moved as (
    insert into {schema}.x_scheduler_state as s (task, watermark, last_occurrence, fired_at)
    values ($1, $3, $4, case when $4::timestamptz is null then null else $5::timestamptz end)
    on conflict (task) do update
        set watermark = excluded.watermark,
            last_occurrence = coalesce(excluded.last_occurrence, s.last_occurrence),
            fired_at = coalesce(excluded.fired_at, s.fired_at)
        where s.watermark = $2
    returning task
),
requested as (
    select *
    from unnest($6::uuid[], $7::uuid[], $8::text[], $9::text[], $10::jsonb[], $11::text[],
                $12::text[], $13::int[], $15::smallint[], $16::timestamptz[])
         with ordinality as r(id, run_id, name, queue, input, idempotency_key, tenant_id,
                              max_attempts, priority, unique_until, ord)
),
inserted as (
    insert into {schema}.x_jobs (
        id, run_id, name, queue, input, idempotency_key, tenant_id, state,
        max_attempts, run_at, created_at, updated_at, priority, unique_until
    )
    select r.id, r.run_id, r.name, r.queue, r.input, r.idempotency_key, r.tenant_id, 'ready',
           r.max_attempts, $5, $5, $5, r.priority, r.unique_until
    from requested r
    where exists (select 1 from moved)
    order by r.ord
    on conflict do nothing
    returning id, run_id, name, queue, idempotency_key, tenant_id
),
woke as (
    select count(*) as queues
    from (select pg_notify($14, q.queue) from (select distinct queue from inserted) q) n
)
select (select count(*) from moved) > 0 as fired,
       r.ord,
       coalesce(i.id, b.id, e.id) as id,
       coalesce(i.run_id, b.run_id, e.run_id) as run_id,
       i.id is null as deduped,
       (select queues from woke) as woke
from requested r
left join inserted i on i.id = r.id
left join inserted b
       on i.id is null
      and b.name = r.name
      and coalesce(b.tenant_id, '') = coalesce(r.tenant_id, '')
      and b.idempotency_key = r.idempotency_key
left join lateral (
    select j.id, j.run_id
    from {schema}.x_jobs j
    where i.id is null
      and j.name = r.name
      and coalesce(j.tenant_id, '') = coalesce(r.tenant_id, '')
      and j.idempotency_key = r.idempotency_key
      and (j.state in ('ready', 'delayed', 'running', 'suspended') or j.unique_until > $5)
    limit 1
) e on true
where exists (select 1 from moved)
union all
select (select count(*) from moved) > 0, 0, null, null, null, null
order by 2
