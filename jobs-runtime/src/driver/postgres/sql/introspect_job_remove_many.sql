-- introspect_job_remove_many: deletes up to $5 rows in state $1 (never running; filters: $2
-- queue, $3 name, $4 tenant), oldest first, and their steps; records `remove` (detail `bulk`)
-- at $6 by actor $7 in the history of each row deleted.
with matched as (
    select j.id, j.run_id, j.created_at
    from {schema}.x_jobs j
    where j.state = $1
      and ($2::text is null or j.queue = $2)
      and ($3::text is null or j.name = $3)
      and ($4::text is null or j.tenant_id = $4)
),
picked as (
    select id, run_id from matched order by created_at, id limit $5
),
steps as (
    delete from {schema}.x_job_steps s
    using picked p
    where s.run_id = p.run_id
      and not exists (
          select 1 from {schema}.x_jobs o
          where o.id = p.run_id and o.run_id = p.run_id
            and o.id not in (select id from picked)
      )
      and not exists (
          select 1 from {schema}.x_jobs o
          where o.run_id = p.run_id and o.run_id <> o.id
            and o.id not in (select id from picked)
      )
),
removed as (
    delete from {schema}.x_jobs j
    using picked p
    where j.id = p.id and j.state = $1
    returning j.id, j.tenant_id
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select r.id, r.tenant_id, $6::timestamptz, $7::text, 'remove', 'bulk'
    from removed r
)
select (select count(*) from removed) as affected,
       (select count(*) from matched) - (select count(*) from removed) as remaining
