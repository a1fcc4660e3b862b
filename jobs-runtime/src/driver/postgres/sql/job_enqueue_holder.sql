-- job_enqueue_holder: after job_enqueue inserted nothing, the row that holds the job: the row
-- with the request's own id ($1: an outbox re-publish, same_id) first, else the live row
-- holding (name $2, tenant $3, key $4). Each is one index probe. Nothing when the holder
-- finished in between: the caller inserts again.
select h.id, h.run_id, h.state, h.id = $1 as same_id
from (
    (
        select j.id, j.run_id, j.state, 0 as rank
        from {schema}.x_jobs j
        where j.id = $1
    )
    union all
    (
        select j.id, j.run_id, j.state, 1 as rank
        from {schema}.x_jobs j
        where j.name = $2
          and coalesce(j.tenant_id, '') = coalesce($3, '')
          and j.idempotency_key = $4
          and j.state in ('ready', 'delayed', 'running', 'suspended')
    )
) h
order by h.rank
limit 1
