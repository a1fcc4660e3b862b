-- introspect_job_promote_many: makes up to $6 rows in state $1 (delayed or ready) that wait on
-- their run time due at $5, oldest first (filters: $2 queue, $3 name, $4 tenant), and
-- announces each queue on channel $7. remaining = rows still waiting. Records `promote`
-- (detail `bulk`) by actor $8 in the history of each row moved.
with matched as (
    select j.id, j.created_at
    from {schema}.x_jobs j
    where j.state = $1
      and j.run_at > $5
      and ($2::text is null or j.queue = $2)
      and ($3::text is null or j.name = $3)
      and ($4::text is null or j.tenant_id = $4)
),
picked as (
    select id from matched order by created_at, id limit $6
),
moved as (
    update {schema}.x_jobs j
    set state = 'ready', run_at = $5, updated_at = $5
    from picked p
    where j.id = p.id and j.state = $1 and j.run_at > $5
    returning j.id, j.tenant_id, j.queue
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select m.id, m.tenant_id, $5::timestamptz, $8::text, 'promote', 'bulk'
    from moved m
)
select (select count(*) from moved) as affected,
       (select count(*) from matched) - (select count(*) from moved) as remaining,
       (select count(*) from (select pg_notify($7, q.queue) from (select distinct queue from moved) q) n) as woke
