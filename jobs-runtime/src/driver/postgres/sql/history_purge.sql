-- history_purge: deletes up to $2 history rows written before $1 whose job is no longer
-- stored, oldest first: run after job_purge in its transaction, it takes the history of the
-- rows that batch deleted (each row's `at` is at or before its job's last `updated_at`) and,
-- once old enough, a removed job's history. Rows another sweeper holds are skipped.
with doomed as (
    select h.seq
    from {schema}.x_job_history h
    where h.at < $1
      and not exists (select 1 from {schema}.x_jobs j where j.id = h.job_id)
    order by h.at
    limit $2
    for update skip locked
)
delete from {schema}.x_job_history h
using doomed d
where h.seq = d.seq
