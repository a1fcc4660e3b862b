-- job_nack: moves a running job to $4 (ready, suspended, failed or dead), fenced on the claim,
-- and counts it. $5 false hands the attempt back uncounted; $7/$8 replace the last error when
-- given. The answer is one row when it landed, none otherwise; `has_dependents` when it ended
-- a job others depend on (the driver then judges them).
-- $10 is 'running', bound by the driver (`execute_fenced` says why it is not a constant).
-- A row sent back to ready or suspended with a run time after $9 (a retry after its backoff, a
-- park) announces that time on the wake channel ($11) as `@<microseconds>:<queue>`, so an idle
-- worker of any process starts it when due (fragment_due_payload.sql); a plain retry due now,
-- a failure and a dead letter notify nothing.
with settled as (
    update {schema}.x_jobs
    set state = $4,
        attempt = case when $5 then attempt else greatest(attempt - 1, 0) end,
        run_at = $6,
        visible_at = null,
        last_error = coalesce($7, last_error),
        last_error_code = case when $7 is null then last_error_code else $8 end,
        updated_at = $9
    where id = $1 and state = $10 and claimed_by = $2 and claims = $3
    returning id, name, queue, state, run_at, updated_at, started_at, $5::boolean as counted,
              has_dependents
),
{count_settled}
select id,
       case when state in ('ready', 'suspended') and run_at > $9
            then (select true from pg_notify($11, {due_payload}))
       end as woke,
       has_dependents and state in ('failed', 'dead') as has_dependents
from settled
