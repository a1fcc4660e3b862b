-- introspect_job_requeue_lapse: before introspect_job_requeue revives job $1, clears the lapsed
-- unique marks of the other finished rows of its key as of $2: such a row holds the key no
-- longer, but its mark keeps it in the live-key index, where it would refuse the revival. The
-- job's own mark is kept (it is no obstacle to itself). Clearing a lapsed mark is right
-- whenever it is done, so this needs no transaction with the requeue.
update {schema}.x_jobs l
set unique_until = null
from {schema}.x_jobs t
where t.id = $1
  and l.name = t.name
  and coalesce(l.tenant_id, '') = coalesce(t.tenant_id, '')
  and l.idempotency_key = t.idempotency_key
  and l.id <> t.id
  and l.unique_until <= $2
  and l.state in ('done', 'failed', 'dead', 'cancelled')
