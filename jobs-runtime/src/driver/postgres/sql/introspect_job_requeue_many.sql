-- introspect_job_requeue_many: re-queues up to $6 finished rows in state $1 (filters: $2 queue,
-- $3 name, $4 tenant), oldest first, due at $5. A row whose key another job holds (a live one,
-- or a finished one inside its unique period) stays put; of several rows sharing one key, the
-- oldest goes. Lapsed unique marks of those keys were cleared first
-- (introspect_job_requeue_many_lapse.sql). remaining = rows a second call could move.
-- Records `requeue` (detail `bulk`) by actor $8 in the history of each row moved. Announces
-- each queue it filled on channel $7.
with candidates as (
    select j.id, j.queue, j.created_at,
           row_number() over (
               partition by j.name, coalesce(j.tenant_id, ''), j.idempotency_key
               order by j.created_at, j.id
           ) as nth
    from {schema}.x_jobs j
    where j.state = $1
      and ($2::text is null or j.queue = $2)
      and ($3::text is null or j.name = $3)
      and ($4::text is null or j.tenant_id = $4)
      and not exists (
          select 1 from {schema}.x_jobs l
          where l.name = j.name
            and coalesce(l.tenant_id, '') = coalesce(j.tenant_id, '')
            and l.idempotency_key = j.idempotency_key
            and l.id <> j.id
            and (l.state in ('ready', 'delayed', 'running', 'suspended') or l.unique_until > $5)
      )
),
movable as (
    select id, queue, created_at from candidates where nth = 1
),
picked as (
    select id from movable order by created_at, id limit $6
),
moved as (
    update {schema}.x_jobs j
    set state = 'ready',
        attempt = 0,
        run_at = $5,
        visible_at = null,
        claimed_by = null,
        progress = null,
        result = null,
        updated_at = $5
    from picked p
    where j.id = p.id and j.state = $1
    returning j.id, j.tenant_id, j.queue
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select m.id, m.tenant_id, $5::timestamptz, $8::text, 'requeue', 'bulk'
    from moved m
)
select (select count(*) from moved) as affected,
       (select count(*) from movable) - (select count(*) from moved) as remaining,
       (select count(*) from (select pg_notify($7, q.queue) from (select distinct queue from moved) q) n) as woke
