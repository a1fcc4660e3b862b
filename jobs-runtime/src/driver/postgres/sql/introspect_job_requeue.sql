-- introspect_job_requeue: puts ONE finished job ($1) back in its queue, due at $3, attempts
-- from zero, on the same run, its progress and kept result cleared: its stored steps replay, except step $2 and every step written
-- after it, which are forgotten so they run again. A live job, an unknown one, or a step the
-- run does not have: no row. Another job holding the key (a live one, or a finished one inside
-- its unique period): the unique live-key index refuses (sqlstate 23505), and nothing changes;
-- the job's own unique mark is no obstacle, and lapsed marks of other rows were cleared first
-- (introspect_job_requeue_lapse.sql). Records `requeue` (or `requeue_from_step`, detail $2)
-- by actor $5 in the job's history. Announces the queue on channel $4.
with target as (
    select j.id, j.run_id
    from {schema}.x_jobs j
    where j.id = $1
      and j.state in ('done', 'failed', 'dead', 'cancelled')
      and ($2::text is null
           or exists (select 1 from {schema}.x_job_steps s where s.run_id = j.run_id and s.name = $2))
    for update
),
forgotten as (
    delete from {schema}.x_job_steps s
    using target t
    where $2::text is not null
      and s.run_id = t.run_id
      and s.updated_at >= (
          select f.updated_at from {schema}.x_job_steps f where f.run_id = t.run_id and f.name = $2
      )
),
requeued as (
    update {schema}.x_jobs j
    set state = 'ready',
        attempt = 0,
        run_at = $3,
        visible_at = null,
        claimed_by = null,
        progress = null,
        result = null,
        updated_at = $3
    from target t
    where j.id = t.id
    returning {j_job_columns}
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select r.id, r.tenant_id, $3::timestamptz, $5::text,
           case when $2::text is null then 'requeue' else 'requeue_from_step' end, $2
    from requeued r
)
select {job_columns}, (select true from pg_notify($4, r.queue)) as woke
from requeued r
