-- introspect_job_remove: deletes job $1 and its steps (unless another job shares the run),
-- unless it is running, and records `remove` at $2 by actor $3 in its history (which stays
-- until the purge takes it). No row: unknown or running (the caller reads which).
with target as (
    select j.id, j.run_id, j.tenant_id
    from {schema}.x_jobs j
    where j.id = $1 and j.state <> 'running'
    for update
),
steps as (
    delete from {schema}.x_job_steps s
    using target t
    where s.run_id = t.run_id
      and not exists (
          select 1 from {schema}.x_jobs o
          where o.id = t.run_id and o.run_id = t.run_id and o.id <> t.id
      )
      and not exists (
          select 1 from {schema}.x_jobs o
          where o.run_id = t.run_id and o.run_id <> o.id and o.id <> t.id
      )
),
removed as (
    delete from {schema}.x_jobs j
    using target t
    where j.id = t.id
    returning {j_job_columns}
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select t.id, t.tenant_id, $2::timestamptz, $3::text, 'remove', null
    from target t
)
select {job_columns} from removed
