-- Marks rows published, fenced on the holder: a lapsed relay's late mark changes nothing.
-- $1 holder, $2 ids, $3 those the job store already held (deduped), $4 now. The rows are found
-- by their primary key.
update {schema}.x_outbox
set published_at = $4, deduped = (id = any($3))
where id = any($2) and claimed_by = $1
  and published_at is null and refused_at is null
