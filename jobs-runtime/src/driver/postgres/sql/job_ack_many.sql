-- job_ack_many: settles many running jobs done in one statement, each only under the claim
-- that holds it ($1 ids, $2 workers, $3 claim ordinals: the same fence as job_ack), and counts
-- them, clearing an earlier attempt's error as job_ack does. Answers the ids whose settle landed.
with settled as (
    update {schema}.x_jobs j
    set state = 'done', visible_at = null, updated_at = $4,
        last_error = null, last_error_code = null
    from unnest($1::uuid[], $2::text[], $3::bigint[]) as a(id, worker, claim)
    where j.id = a.id and j.state = 'running' and j.claimed_by = a.worker and j.claims = a.claim
    returning j.id, j.name, j.state, j.updated_at, j.started_at, true as counted
),
{count_settled}
select id from settled
