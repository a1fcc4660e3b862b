-- job_ack: settles a running job done, only under the claim that holds it (worker $2, claim
-- ordinal $3), and counts it. A lapsed and re-claimed row, or a cancelled one, matches nothing:
-- the answer is then no row. A completed job carries no error from an earlier attempt (an
-- interruption such as X_DRAINING, a retried failure): its step records keep their own. $5 is
-- the result the job keeps (`keep_result`) as JSON text, null for none: written with the settle,
-- so an ack fenced out keeps nothing. `has_dependents`: the driver then judges the job's
-- dependents (driver/postgres/dependencies.rs).
-- $6 is 'running', bound by the driver (`execute_fenced` says why it is not a constant).
with settled as (
    update {schema}.x_jobs
    set state = 'done', visible_at = null, updated_at = $4,
        last_error = null, last_error_code = null, result = $5::text::jsonb
    where id = $1 and state = $6 and claimed_by = $2 and claims = $3
    returning id, name, state, updated_at, started_at, true as counted, has_dependents
),
{count_settled}
select id, has_dependents from settled
