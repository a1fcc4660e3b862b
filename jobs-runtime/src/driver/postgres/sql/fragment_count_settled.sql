-- fragment_count_settled: spliced as one of its CTEs where a statement names count_settled (in
-- braces), when the statement is rendered.
-- The operator counters move in the statement that settles the rows, from its CTE `settled`
-- (name, state, updated_at, started_at, counted): once per statement, one delta row per job
-- name and minute (no row is ever updated in place, so settling workers never wait on each
-- other; the scheduler leader's rollup folds them). Done, failed and dead rows count; a row
-- back to ready counts as a retry only when its attempt was counted. A suspension, a cancel and
-- an uncounted hand-back (a shed, a drain) add nothing.
counted as (
    insert into {schema}.x_job_counters
        (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
    select s.name,
           60,
           to_timestamp(floor(extract(epoch from s.updated_at) / 60) * 60),
           count(*) filter (where s.state = 'done'),
           count(*) filter (where s.state = 'ready'),
           count(*) filter (where s.state = 'failed'),
           count(*) filter (where s.state = 'dead'),
           coalesce(sum(floor(extract(epoch from (s.updated_at - coalesce(s.started_at, s.updated_at))) * 1000)), 0)::bigint
    from settled s
    where s.state in ('done', 'failed', 'dead') or (s.state = 'ready' and s.counted)
    group by 1, 3
)
