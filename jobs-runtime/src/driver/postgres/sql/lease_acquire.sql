-- lease_acquire: grants the lowest free slot of key $1 among 0..$2-1 to holder $3 until $5.
-- Free: no row, or a row that lapsed before $4. The fence comes from the one sequence
-- x_job_lease_fence.
-- Runs inside a transaction that first took lease_acquire_lock.sql for the key: acquirers of
-- one key take turns, so a later grant always carries a larger fence than an earlier one (a
-- sequence value drawn by a statement that then waited on a conflict could otherwise be
-- granted after a larger one). Never over-grants: a live row fails "expires_at <= $4".
--
-- It also deletes up to $7 grants of other keys that lapsed at or before $6 (now less
-- LEASE_SWEEP_AFTER), oldest first: one bounded range of x_job_leases_expiry_idx, skipping
-- rows another transaction holds (an acquirer of that key takes its lapsed slot over, which
-- a deletion does as well). A rate's grants are never released, so without it every key a
-- keyed rate saw would keep its rows; this key's own lapsed rows are left to the upsert.
with swept as (
    delete from {schema}.x_job_leases l
    using (
        select o.lease_key, o.slot
        from {schema}.x_job_leases o
        where o.expires_at <= $6 and o.lease_key <> $1
        order by o.expires_at
        limit $7
        for update skip locked
    ) o
    where l.lease_key = o.lease_key and l.slot = o.slot
),
free as (
    select s.slot
    from generate_series(0, $2 - 1) as s(slot)
    left join {schema}.x_job_leases l on l.lease_key = $1 and l.slot = s.slot
    where l.slot is null or l.expires_at <= $4
    order by s.slot
    limit 1
)
insert into {schema}.x_job_leases (lease_key, slot, holder, expires_at, fence)
select $1, free.slot, $3, $5, nextval('{schema}.x_job_lease_fence') from free
on conflict (lease_key, slot) do update
set holder = excluded.holder, expires_at = excluded.expires_at, fence = excluded.fence
where {schema}.x_job_leases.expires_at <= $4
returning lease_key, slot, holder, fence, expires_at
