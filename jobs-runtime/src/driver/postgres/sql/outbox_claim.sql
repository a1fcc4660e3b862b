-- outbox_claim: the relay's claim, one statement: takes the outbox's lease for $1 unless another holder's
-- claim has not lapsed ($4: claims made after it are live; the lease row's lock makes claims
-- take turns), and answers the outbox's rows after ($5, $6) in (staged_at, id) order: the head
-- (a position before every row), or, when $7, after the holder's batches awaiting their marks.
-- The lease keeps the holder, the time and the last row taken (the stage's wake reads it); a
-- claim from the head that takes nothing leaves it free, so an idle relay holds nothing (and,
-- finding it free, writes nothing).
-- The head is read from this statement's snapshot, the lease's lock taken on its latest
-- version: a claim that waited on the lease behind another's claim, marks or release would
-- answer rows that holder published meanwhile. So the lease is taken only when no one wrote it
-- since the snapshot (its `xmin` is the one the snapshot saw); otherwise the claim takes nothing
-- and the next one reads afresh. A holder's own claim after its position ($7: a drain claims
-- while its last batch is marked, and each mark writes the lease) is the exception: the rows
-- after its position are its own to take while it holds the lease, and nobody else marked them.
-- $1 holder, $2 rows, $3 now.
with seen as (
    select xmin from {schema}.x_outbox_lease where id = 1
), head as (
    select id, run_id, name, queue, input, idempotency_key, tenant_id, max_attempts, run_at,
        on_conflict, traceparent, actor, staged_at, publish_attempts, priority, unique_for_ms
    from {schema}.x_outbox
    where published_at is null and refused_at is null and (staged_at, id) > ($5, $6)
    order by staged_at, id
    limit $2
), keep as (
    select exists (select 1 from head) or $7 as held
), last as (
    select staged_at, id from head order by staged_at desc, id desc limit 1
), lease as (
    insert into {schema}.x_outbox_lease as l (id, claimed_by, claimed_at, last_staged_at, last_id)
    select 1,
        case when keep.held then $1::text end,
        case when keep.held then $3::timestamptz end,
        (select staged_at from last),
        (select id from last)
    from keep
    on conflict (id) do update
    set claimed_by = excluded.claimed_by,
        claimed_at = excluded.claimed_at,
        last_staged_at = coalesce(excluded.last_staged_at, l.last_staged_at),
        last_id = coalesce(excluded.last_id, l.last_id)
    where (l.xmin = (select xmin from seen) or ($7 and l.claimed_by = $1))
      and (l.claimed_by is null or l.claimed_by = $1 or l.claimed_at <= $4)
      -- an idle relay's claim finds the lease free and leaves it so, writing nothing
      and (excluded.claimed_by is not null or l.claimed_by is not null)
    returning 1
)
select id, run_id, name, queue, input, idempotency_key, tenant_id, max_attempts, run_at,
    on_conflict, traceparent, actor, staged_at, publish_attempts, priority, unique_for_ms
from head
where exists (select 1 from lease)
order by staged_at, id
