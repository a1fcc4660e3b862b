-- job_purge: deletes up to $3 done rows settled before $1, and up to $3 failed, dead or
-- cancelled rows settled before $2, oldest first, on their partial indexes (x_jobs_done_idx,
-- x_jobs_failed_idx), with the steps of their runs. Rows another sweeper holds are skipped.
-- A run whose id another job still carries keeps its steps. A purged dependent's edges go too.
with done as (
    select id, run_id
    from {schema}.x_jobs
    where state = 'done' and updated_at < $1
    order by updated_at
    limit $3
    for update skip locked
),
finished as (
    select id, run_id
    from {schema}.x_jobs
    where state in ('failed', 'dead', 'cancelled') and updated_at < $2
    order by updated_at
    limit $3
    for update skip locked
),
doomed as (
    select id, run_id from done
    union all
    select id, run_id from finished
),
steps as (
    delete from {schema}.x_job_steps s
    using doomed d
    where s.run_id = d.run_id
      and not exists (
          select 1 from {schema}.x_jobs j
          where j.id = d.run_id and j.run_id = d.run_id and j.id <> d.id
      )
      and not exists (
          select 1 from {schema}.x_jobs j
          where j.run_id = d.run_id and j.run_id <> j.id and j.id <> d.id
      )
),
-- The edges of a purged dependent go with it (0029); a dependency's stay, read as gone.
edges as (
    delete from {schema}.x_job_dependencies e
    using doomed d
    where e.job_id = d.id
),
gone as (
    delete from {schema}.x_jobs j
    using doomed d
    where j.id = d.id
    returning 1
)
select count(*) from gone
