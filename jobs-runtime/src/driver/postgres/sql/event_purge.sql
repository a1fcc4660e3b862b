-- event_purge: deletes up to $2 events expired at $1 (no wait can match them: event_find asks
-- for expires_at > now), oldest expiry first, on x_job_events_expiry_idx. Rows another purger
-- holds are skipped.
with doomed as (
    select id
    from {schema}.x_job_events
    where expires_at <= $1
    order by expires_at
    limit $2
    for update skip locked
),
gone as (
    delete from {schema}.x_job_events e
    using doomed d
    where e.id = d.id
    returning 1
)
select count(*) from gone
