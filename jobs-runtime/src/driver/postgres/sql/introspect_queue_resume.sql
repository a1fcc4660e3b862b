-- introspect_queue_resume: resumes queue $1 and announces it on channel $2, so idle workers
-- claim at once.
with resumed as (
    delete from {schema}.x_job_pauses where queue = $1 returning queue
)
select (select count(*) from resumed) > 0 as resumed,
       (select count(*) from (select pg_notify($2, r.queue) from resumed r) n) as woke
