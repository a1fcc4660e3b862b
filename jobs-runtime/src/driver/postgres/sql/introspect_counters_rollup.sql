-- introspect_counters_rollup: folds the counter rows at $1 (now). A row whose bucket aged past
-- its tier (1-minute buckets kept 24 hours, 5-minute 7 days, 1-hour 30 days) moves into the
-- bucket of the next tier, or is dropped past the last, and the delta rows of one bucket
-- become one row. Sums come from the rows this statement deleted, so concurrent rollups never
-- count a row twice. Answers the rows rewritten.
with aged as (
    select c.ctid as rid, c.width_secs,
           count(*) over (partition by c.name, c.width_secs, c.bucket) as copies,
           case when c.bucket > $1 - interval '24 hours' then 60
                when c.bucket > $1 - interval '7 days' then 300
                when c.bucket > $1 - interval '30 days' then 3600
           end as target
    from {schema}.x_job_counters c
),
doomed as (
    select rid from aged where target is distinct from width_secs or copies > 1
),
moved as (
    delete from {schema}.x_job_counters c
    using doomed d
    where c.ctid = d.rid
    returning c.name, c.bucket, c.done, c.retried, c.failed, c.dead, c.duration_ms,
              case when c.bucket > $1 - interval '24 hours' then 60
                   when c.bucket > $1 - interval '7 days' then 300
                   when c.bucket > $1 - interval '30 days' then 3600
              end as target
),
folded as (
    insert into {schema}.x_job_counters
        (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
    select name, target, to_timestamp(floor(extract(epoch from bucket) / target) * target),
           sum(done), sum(retried), sum(failed), sum(dead), sum(duration_ms)
    from moved
    where target is not null
    group by 1, 2, 3
)
select count(*) as moved from moved
