-- Marks rows published, fenced on the outbox's lease: a lapsed relay's late mark, after another
-- took the lease over, changes nothing. $1 holder, $2 ids, $3 those the job store already held
-- (deduped), $4 now. The rows are found by their primary key: the unsettled test is written so
-- it does not match the pending index's predicate, which would let a plan walk the whole
-- backlog filtering on the ids (a generic plan on a table without statistics does).
update {schema}.x_outbox
set published_at = $4, published_by = $1, deduped = (id = any($3))
where id = any($2) and coalesce(published_at, refused_at) is null
  and exists (select 1 from {schema}.x_outbox_lease where id = 1 and claimed_by = $1)
