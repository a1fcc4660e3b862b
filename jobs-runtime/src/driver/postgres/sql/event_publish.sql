-- event_publish: stores the event (its xact stamps the inserting transaction, so a publish
-- inside a transaction is seen only if it commits) and wakes the runs parked on it through
-- x_job_steps_waiting_idx. A run's job is the one whose id is the run's, or one on
-- x_jobs_run_shared_idx.
with event as (
    insert into {schema}.x_job_events (id, name, key, payload, published_at, expires_at)
    values ($1, $2, $3, $4, $5, $6)
    returning id
),
woken as (
    update {schema}.x_jobs j
    set run_at = $5
    from {schema}.x_job_steps s
    cross join lateral (
        select o.id from {schema}.x_jobs o where o.id = s.run_id and o.run_id = s.run_id
        union all
        select o.id from {schema}.x_jobs o where o.run_id = s.run_id and o.run_id <> o.id
    ) r
    where s.status = 'waiting'
      and s.wait ->> 'event' = $2
      and s.wait ->> 'key' = $3
      and j.id = r.id
      and j.state = 'suspended'
      and j.run_at > $5
    returning j.id
)
select id from event
