-- outbox_published_then_claim: a draining relay's step between batches, one statement where it made two (the mark of the
-- batch it published, then the claim of the rows after the batch it is publishing), so one
-- commit and one turn at the lease row's lock. Both are fenced on the lease as this relay's:
-- the lease row's latest version must name $1 (the update waits for any other writer of it and
-- checks the row as that writer left it), else nothing is marked and nothing taken, and the
-- relay's next claim starts from the head. The update writes the lease row, as the mark and the
-- claim each do (outbox_published.sql says why); the rows marked are before the position
-- ($5, $6) and the rows read after it, so the two parts never touch one row.
-- $1 holder, $2 rows to take, $3 the claim's now, $4 ids to mark, $5 $6 the position, $7 those
-- of $4 the job store already held (deduped), $8 the mark's now.
with head as (
    select id, run_id, name, queue, input, idempotency_key, tenant_id, max_attempts, run_at,
        on_conflict, traceparent, actor, staged_at, publish_attempts, priority, unique_for_ms
    from {schema}.x_outbox
    where published_at is null and refused_at is null and (staged_at, id) > ($5, $6)
    order by staged_at, id
    limit $2
), last as (
    select staged_at, id from head order by staged_at desc, id desc limit 1
), lease as (
    update {schema}.x_outbox_lease as l
    set claimed_at = $3,
        last_staged_at = coalesce((select staged_at from last), l.last_staged_at),
        last_id = coalesce((select id from last), l.last_id)
    where l.id = 1 and l.claimed_by = $1
    returning 1
), marked as (
    update {schema}.x_outbox
    set published_at = $8, published_by = $1, deduped = (id = any($7))
    where id = any($4) and coalesce(published_at, refused_at) is null
      and exists (select 1 from lease)
    returning 1
)
select id, run_id, name, queue, input, idempotency_key, tenant_id, max_attempts, run_at,
    on_conflict, traceparent, actor, staged_at, publish_attempts, priority, unique_for_ms
from head
where exists (select 1 from lease)
order by staged_at, id
