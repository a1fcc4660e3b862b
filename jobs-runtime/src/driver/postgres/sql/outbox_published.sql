-- outbox_published: marks rows published, fenced on the outbox's lease: a lapsed relay's late mark, after another
-- took the lease over, changes nothing. $1 holder, $2 ids, $3 those the job store already held
-- (deduped), $4 now. The rows are found by their primary key: the unsettled test is written so
-- it does not match the pending index's predicate, which would let a plan walk the whole
-- backlog filtering on the ids (a generic plan on a table without statistics does).
--
-- The mark writes the lease row (a new version of it, no value changed), as the claim and the
-- release do: a claim that read the outbox before this mark committed and locks the lease after
-- it sees the lease written since its snapshot and takes nothing (outbox_claim.sql), so no relay
-- taking a lapsed lease over publishes again what this mark recorded. Were the lease row left as
-- it was, such a claim would answer these rows (unpublished in its snapshot).
with held as (
    update {schema}.x_outbox_lease
    set claimed_by = claimed_by
    where id = 1 and claimed_by = $1
    returning 1
)
update {schema}.x_outbox
set published_at = $4, published_by = $1, deduped = (id = any($3))
where id = any($2) and coalesce(published_at, refused_at) is null
  and exists (select 1 from held)
