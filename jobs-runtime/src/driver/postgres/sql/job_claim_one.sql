-- job_claim_one: job_claim_known for its most common case, one queue ($1, $2 free slots) and
-- one tenant the driver knows ($6, `''` for none, read from its floor $9 rank, $7, $8): the same
-- rows in the same order, marked running under worker $3 until $5, at $4. A paused queue yields
-- nothing. With a single tenant there are no turns to take, so the rows come straight from the
-- scans' order and LIMIT, without job_claim_known's unnest, joins, window aggregates and sorts.
-- Why: an idle worker woken for one row waits on this statement's fixed cost.
--
-- The tenant's rows are taken by priority class (the rank, the priority negated: highest
-- priority first), then run time. The classes it has queued rows in are found by a skip scan
-- (`classes`: the first from the floor, then one probe past each), and each class's due rows
-- are read by their own seek, bounded by `run_at <= now`: a class's rows not yet due are never
-- walked. A tenant of one priority costs two probes and one seek.
--
-- Rows are locked FOR UPDATE SKIP LOCKED, and the claim commits without waiting for its WAL
-- flush, as job_claim does (see there).
with recursive classes (rank) as (
    (
        select -j.priority
        from {schema}.x_jobs j
        where (select set_config('synchronous_commit', 'off', true)) is not null
          and not exists (select 1 from {schema}.x_job_pauses p where p.queue = $1)
          and j.queue = $1
          and coalesce(j.tenant_id, '') = $6
          and j.state in ('ready', 'delayed', 'suspended')
          and (-j.priority, j.run_at, j.id) >= ($9::smallint, $7, $8)
        order by -j.priority, j.run_at, j.id
        limit 1
    )
    union all
    select n.rank
    from classes c
    cross join lateral (
        select -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = $1
          and coalesce(j.tenant_id, '') = $6
          and j.state in ('ready', 'delayed', 'suspended')
          and -j.priority > c.rank
        order by -j.priority
        limit 1
    ) n
),
queued as (
    select q.id
    from classes c
    cross join lateral (
        select j.id, j.run_at
        from {schema}.x_jobs j
        where j.queue = $1
          and coalesce(j.tenant_id, '') = $6
          and -j.priority = c.rank
          and j.state in ('ready', 'delayed', 'suspended')
          -- From the floor in its own class; from the start of every later class.
          and (j.run_at, j.id) >= (
              case when c.rank = $9::smallint then $7 else '-infinity'::timestamptz end,
              case when c.rank = $9::smallint then $8 else '00000000-0000-0000-0000-000000000000'::uuid end
          )
          and j.run_at <= $4
        order by j.run_at, j.id
        limit $2
        for update skip locked
    ) q
    order by c.rank, q.run_at, q.id
    limit $2
),
-- Every row taken fits the slots: the LIMIT saw to it.
ranked as (
    select id, 1 as n, 1 as slots from queued
)
{claim_running}
