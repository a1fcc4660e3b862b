-- Marks rows published, fenced on the holder: a lapsed relay's late mark changes nothing.
-- $1 holder, $2 ids, $3 whether each was deduped at the job store, $4 now.
update {schema}.x_outbox o
set published_at = $4, deduped = p.deduped
from unnest($2::uuid[], $3::boolean[]) as p(id, deduped)
where o.id = p.id and o.claimed_by = $1
  and o.published_at is null and o.refused_at is null
