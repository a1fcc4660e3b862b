-- introspect_job_remove: deletes job $1 and its steps (unless another job shares the run),
-- unless it is running. No row: unknown or running (the caller reads which).
with target as (
    select j.id, j.run_id
    from {schema}.x_jobs j
    where j.id = $1 and j.state <> 'running'
    for update
),
steps as (
    delete from {schema}.x_job_steps s
    using target t
    where s.run_id = t.run_id
      and not exists (
          select 1 from {schema}.x_jobs o where o.run_id = t.run_id and o.id <> t.id
      )
),
removed as (
    delete from {schema}.x_jobs j
    using target t
    where j.id = t.id
    returning {j_job_columns}
)
select {job_columns} from removed
