-- 0020: a run's id is its first job's id (Jobs mints them equal unless a run is named), so the
-- run index keeps only the rows whose run began elsewhere: one index entry fewer for every
-- insert, claim and settle of every other row. A lookup by run id reads the job whose id the
-- run's is (the primary key) and this index. Building it locks the table for writes while it
-- builds, as 0018 does.
create index if not exists x_jobs_run_shared_idx
    on {schema}.x_jobs (run_id)
    where run_id <> id;

drop index if exists {schema}.x_jobs_run_idx;

-- The commit wake (0001) finds a run's job the same way.
create or replace function {schema}.x_job_events_commit_wake() returns trigger
language plpgsql as $body$
begin
    update {schema}.x_jobs j
    set run_at = least(j.run_at, new.published_at)
    from {schema}.x_job_steps s
    cross join lateral (
        select o.id from {schema}.x_jobs o where o.id = s.run_id and o.run_id = s.run_id
        union all
        select o.id from {schema}.x_jobs o where o.run_id = s.run_id and o.run_id <> o.id
    ) r
    where s.status = 'waiting'
      and s.wait ->> 'event' = new.name
      and s.wait ->> 'key' = new.key
      and j.id = r.id
      and j.state = 'suspended'
      and j.run_at > new.published_at;
    return null;
end
$body$;
