-- introspect_job_requeue_many_lapse: before introspect_job_requeue_many, clears the lapsed unique
-- marks (unique_until <= $5) of the finished rows sharing a key with a row it may move (state
-- $1; filters: $2 queue, $3 name, $4 tenant), the rows themselves included: a lapsed mark holds
-- nothing, but keeps its row in the live-key index, where it would refuse a revival. Clearing a
-- lapsed mark is right whenever it is done, so this needs no transaction with the requeue.
update {schema}.x_jobs l
set unique_until = null
where l.unique_until <= $5
  and l.state in ('done', 'failed', 'dead', 'cancelled')
  and exists (
      select 1 from {schema}.x_jobs j
      where j.state = $1
        and ($2::text is null or j.queue = $2)
        and ($3::text is null or j.name = $3)
        and ($4::text is null or j.tenant_id = $4)
        and j.name = l.name
        and coalesce(j.tenant_id, '') = coalesce(l.tenant_id, '')
        and j.idempotency_key = l.idempotency_key
  )
