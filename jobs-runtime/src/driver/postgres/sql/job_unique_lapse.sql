-- job_unique_lapse: clears the lapsed unique marks of some keys (names $1, tenants $2, keys $3,
-- one array element per key) as of $4: a finished row whose unique period ended (unique_until
-- <= $4) holds its key no longer, but its mark keeps it in x_jobs_name_tenant_idempotency_live_idx,
-- where it would refuse the next row of the key. Run before a statement that inserts or revives
-- rows of those keys without a holder lookup of its own (task_fire). Clearing a lapsed mark is
-- right whenever it is done, so it needs no transaction with what follows. Each key is one
-- probe of the live-key index (a lapsed mark implies the index's predicate).
update {schema}.x_jobs l
set unique_until = null
from unnest($1::text[], $2::text[], $3::text[]) as k(name, tenant_id, idempotency_key)
where l.name = k.name
  and coalesce(l.tenant_id, '') = coalesce(k.tenant_id, '')
  and l.idempotency_key = k.idempotency_key
  and l.unique_until <= $4
  and l.state in ('done', 'failed', 'dead', 'cancelled')
