-- introspect_job_promote: makes job $1, waiting on its run time (delayed, or ready and backing
-- off), due at $2, records `promote` by actor $4 in its history, and announces its queue on
-- channel $3. Not waiting: no row, and no history row.
with promoted as (
    update {schema}.x_jobs j
    set state = 'ready', run_at = $2, updated_at = $2
    where j.id = $1 and j.state in ('delayed', 'ready') and j.run_at > $2
    returning {j_job_columns}
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select p.id, p.tenant_id, $2::timestamptz, $4::text, 'promote', null
    from promoted p
)
select {job_columns}, (select true from pg_notify($3, p.queue)) as woke
from promoted p
