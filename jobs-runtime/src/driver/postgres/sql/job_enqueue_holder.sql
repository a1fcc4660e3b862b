-- job_enqueue_holder: after job_enqueue inserted nothing, the row that holds the job: the row
-- with the request's own id ($1: an outbox re-publish, same_id) first, else the row holding
-- (name $2, tenant $3, key $4) at $5: a live one, or a finished one still inside its unique
-- period (unique_until > $5). Each is one index probe. Nothing when the holder finished in
-- between: the caller inserts again.
--
-- A finished row of the key whose unique period lapsed holds nothing, but its mark keeps it in
-- the live-key index, where it would refuse every insert: `lapsed` clears the mark in the same
-- statement (the select reads the rows as they were, and answers none of them), so the
-- caller's next round inserts.
with lapsed as (
    update {schema}.x_jobs l
    set unique_until = null
    where l.name = $2
      and coalesce(l.tenant_id, '') = coalesce($3, '')
      and l.idempotency_key = $4
      and l.unique_until <= $5
      and l.state in ('done', 'failed', 'dead', 'cancelled')
)
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
          and (j.state in ('ready', 'delayed', 'running', 'suspended') or j.unique_until > $5)
    )
) h
order by h.rank
limit 1
