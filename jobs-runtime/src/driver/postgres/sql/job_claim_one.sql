-- job_claim_one: job_claim_known for its most common case, one queue ($1, $2 free slots) and
-- one tenant the driver knows ($6, `''` for none, read from its floor $9 rank, $7, $8): the same
-- rows in the same order, marked running under worker $3 until $5, at $4. A paused queue yields
-- nothing. With a single tenant there are no turns to take, so the rows come straight from the
-- scans' order and LIMIT, without job_claim_known's unnest, joins, window aggregates and sorts.
-- Why: an idle worker woken for one row waits on this statement's fixed cost.
--
-- The tenant's rows are taken by priority class (the rank, the priority negated: highest
-- priority first), then run time. No row sits before the floor, so the floor's own class is
-- read first, by one seek from the floor bounded by `run_at <= now` (`floor_class`). Only when
-- that leaves slots free are the later classes found, by a skip scan (`later_classes`: one
-- probe for the first past the floor's, one past each) and read by their own seeks: a class's
-- rows not yet due are never walked. A claim the floor's class fills (every claim of a tenant
-- of one priority with its queue backed up) costs one seek, as before priorities.
--
-- Rows are locked FOR UPDATE SKIP LOCKED, and the claim commits without waiting for its WAL
-- flush, as job_claim does (see there).
with recursive floor_class as (
    select j.id, -j.priority as rank, j.run_at
    from {schema}.x_jobs j
    where (select set_config('synchronous_commit', 'off', true)) is not null
      and not exists (select 1 from {schema}.x_job_pauses p where p.queue = $1)
      and j.queue = $1
      and coalesce(j.tenant_id, '') = $6
      and -j.priority = $9::smallint
      and j.state in ('ready', 'delayed', 'suspended')
      and (j.run_at, j.id) >= ($7, $8)
      and j.run_at <= $4
    order by j.run_at, j.id
    limit $2
    for update skip locked
),
later_classes (queue, tenant, rank) as (
    (
        select j.queue, $6::text, -j.priority
        from {schema}.x_jobs j
        where (select count(*) from floor_class) < $2
          and not exists (select 1 from {schema}.x_job_pauses p where p.queue = $1)
          and j.queue = $1
          and coalesce(j.tenant_id, '') = $6
          and j.state in ('ready', 'delayed', 'suspended')
          and -j.priority > $9::smallint
        order by -j.priority
        limit 1
    )
    union all
    select s.queue, s.tenant, n.rank
    from later_classes s
    {next_class}
),
later as (
    select q.id, q.rank, q.run_at
    from later_classes c
    cross join lateral (
        select j.id, c.rank, j.run_at
        from {schema}.x_jobs j
        where j.queue = $1
          and coalesce(j.tenant_id, '') = $6
          and -j.priority = c.rank
          and j.state in ('ready', 'delayed', 'suspended')
          and j.run_at <= $4
        order by j.run_at, j.id
        limit $2
        for update skip locked
    ) q
),
queued as (
    select t.id
    from (
        select id, rank, run_at from floor_class
        union all
        select id, rank, run_at from later
    ) t
    order by t.rank, t.run_at, t.id
    limit $2
),
-- Every row taken fits the slots: the LIMIT saw to it.
ranked as (
    select id, 1 as n, 1 as slots from queued
)
{claim_running}
