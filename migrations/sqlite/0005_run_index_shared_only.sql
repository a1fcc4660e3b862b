-- 0005: a run's id is its first job's id (Jobs mints them equal unless a run is named), so the
-- run index keeps only the rows whose run began elsewhere, as on Postgres (0020): one index
-- entry, and one page written per commit, fewer for every enqueue. A lookup by run id reads the
-- job whose id the run's is (the primary key) and this index.
create index if not exists x_jobs_run_shared_idx
    on x_jobs (run_id)
    where run_id <> id;

drop index if exists x_jobs_run_idx;

-- The event wake (0001) finds a run's jobs the same way.
drop trigger if exists x_job_events_wake;

create trigger x_job_events_wake
    after insert on x_job_events
begin
    update x_jobs
    set run_at = new.published_at
    where state = 'suspended'
      and run_at > new.published_at
      and id in (
          select j.id from x_jobs j
          where j.id in (
                  select s.run_id from x_job_steps s
                  where s.status = 'waiting'
                    and s.wait ->> 'event' = new.name
                    and s.wait ->> 'key' = new.key
              )
            and j.run_id = j.id
          union all
          select j.id from x_jobs j
          where j.run_id in (
                  select s.run_id from x_job_steps s
                  where s.status = 'waiting'
                    and s.wait ->> 'event' = new.name
                    and s.wait ->> 'key' = new.key
              )
            and j.run_id <> j.id
      );
end;
