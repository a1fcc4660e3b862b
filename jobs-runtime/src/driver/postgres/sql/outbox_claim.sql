-- The relay's claim, run after pg_advisory_xact_lock on the outbox in the same transaction,
-- so claims take turns and each sees the last one's stamps. Takes the head of the outbox in
-- (staged_at, id) order and stamps the holder on it, unless another holder's claim there has
-- not lapsed ($4: claims made after it are live), passing over the rows in $5 (the holder's
-- batch awaiting its mark). $1 holder, $2 rows, $3 now.
with head as (
    select id from {schema}.x_outbox
    where published_at is null and refused_at is null
      and id <> all($5)
      and not exists (
          select 1 from {schema}.x_outbox held
          where held.published_at is null and held.refused_at is null
            and held.claimed_by is not null and held.claimed_by <> $1
            and held.claimed_at > $4
      )
    order by staged_at, id
    limit $2
    for update
)
-- The rows are found by their primary key: a join would let the planner hash the whole table,
-- the audit trail included, on every claim.
update {schema}.x_outbox o
set claimed_by = $1, claimed_at = $3
where o.id = any(array(select id from head))
returning o.id, o.run_id, o.name, o.queue, o.input, o.idempotency_key, o.tenant_id,
    o.max_attempts, o.run_at, o.on_conflict, o.traceparent, o.actor, o.staged_at,
    o.publish_attempts, o.priority, o.unique_for_ms
