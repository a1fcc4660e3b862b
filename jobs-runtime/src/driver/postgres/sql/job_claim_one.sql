-- job_claim_one: job_claim_known for its most common case, one queue ($1, $2 free slots) and
-- one tenant the driver knows ($6, `''` for none, read from its floor $9 rank, $7, $8): the same rows in
-- the same order, marked running under worker $3 until $5, at $4. A paused queue yields
-- nothing. With a single tenant there are no turns to take, so the rows come straight from the
-- scan's order and LIMIT, without job_claim_known's unnest, joins, window aggregates and sorts.
-- Why: an idle worker woken for one row waits on this statement's fixed cost.
--
-- Rows are locked FOR UPDATE SKIP LOCKED, and the claim commits without waiting for its WAL
-- flush, as job_claim does (see there).
with queued as (
    select j.id
    from {schema}.x_jobs j
    where (select set_config('synchronous_commit', 'off', true)) is not null
      and not exists (select 1 from {schema}.x_job_pauses p where p.queue = $1)
      and j.queue = $1
      and coalesce(j.tenant_id, '') = $6
      and j.state in ('ready', 'delayed', 'suspended')
      and (-j.priority, j.run_at, j.id) >= ($9::smallint, $7, $8)
      and j.run_at <= $4
    order by -j.priority, j.run_at, j.id
    limit $2
    for update skip locked
),
-- Every row the scan took fits the slots: the LIMIT saw to it.
ranked as (
    select id, 1 as n, 1 as slots from queued
)
{claim_running}
