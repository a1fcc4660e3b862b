-- job_claim_from: job_claim from the claim floors (driver/postgres/floors.rs): the same fair
-- claim of due rows per queue ($1 queues, $2 free slots) under worker $3 until $5, at $4, but
-- each known tenant ($7 queue, $8 tenant) is read from its floor ($14 rank, the priority
-- negated, $9, $10: a position in x_jobs_fair_idx's order) onwards, where the driver last saw
-- its first claimable row, instead of from the start of its range.
--
-- Why: every claim and settle leaves the row's earlier version behind, and its entry in
-- x_jobs_fair_idx stays until vacuum removes it; vacuum cannot while any older snapshot is
-- open (a long report, pg_dump, an idle transaction), so a claim that starts at the head of
-- the range walks every row claimed since, each a heap visit, and slows down with each one.
-- A seek to the floor walks none of them.
--
-- Tenants the driver does not know are found as job_claim finds every tenant (a skip scan,
-- one probe per tenant), but only in the gaps between the known tenants, so no probe walks a
-- known tenant's range; the probes skip, inside the index, every entry due before the queue's
-- discovery floor ($11 per queue, aligned with $1). Every tenant probed answers its head (its
-- first claimable row, or none), from which the driver moves its floors.
--
-- Lapsed leases are read the same way: each queue's running rows from its lapse floor ($12,
-- aligned with $1), where the driver last saw the first lease that had lapsed, and answered
-- with the earliest lapsed lease found. The driver runs job_claim instead of this statement at
-- least every few hundred milliseconds (see floors.rs).
--
-- The claim commits without waiting for its WAL flush, as job_claim does (see there).
with recursive demand as (
    select d.queue, d.slots,
           coalesce(d.discovery_floor, '-infinity') as discovery_floor,
           coalesce(d.lapse_floor, '-infinity') as lapse_floor
    from unnest($1::text[], $2::int[], $11::timestamptz[], $12::timestamptz[])
        as d(queue, slots, discovery_floor, lapse_floor)
    where (select set_config('synchronous_commit', 'off', true)) is not null
      and not exists (select 1 from {schema}.x_job_pauses p where p.queue = d.queue)
),
known as (
    select k.queue, k.tenant, k.floor_rank, k.floor_at, k.floor_id
    from unnest($7::text[], $8::text[], $9::timestamptz[], $10::uuid[], $14::smallint[])
        as k(queue, tenant, floor_at, floor_id, floor_rank)
    where exists (select 1 from demand d where d.queue = k.queue)
),
-- The priority classes (the rank: the priority negated, highest priority first) each known
-- tenant has queued rows in at or after its floor, found by a skip scan: one probe for the
-- first, one past each. Each class's due rows are then read by a seek bounded by
-- `run_at <= now`, so no class's rows that are not yet due are walked.
{floor_classes},
-- Each known tenant's head: its first claimable row at or after its floor (the first due row
-- of its first class that has one).
known_heads as (
    select k.queue, k.tenant, h.rank as head_rank, h.run_at as head_at, h.id as head_id
    from known k
    left join lateral (
        select c.rank, f.run_at, f.id
        from known_classes c
        cross join lateral (
            select j.run_at, j.id
            from {schema}.x_jobs j
            where j.queue = c.queue
              and coalesce(j.tenant_id, '') = c.tenant
              and -j.priority = c.rank
              and j.state in ('ready', 'delayed', 'suspended')
              -- From the floor in its own class; from the start of every later class.
              and (j.run_at, j.id) >= (
                  case when c.rank = c.floor_rank then c.floor_at
                       else '-infinity'::timestamptz end,
                  case when c.rank = c.floor_rank then c.floor_id
                       else '00000000-0000-0000-0000-000000000000'::uuid end
              )
              and j.run_at <= $4
            order by j.run_at, j.id
            limit 1
        ) f
        where c.queue = k.queue and c.tenant = k.tenant
        order by c.rank, f.run_at, f.id
        limit 1
    ) h on true
),
-- The gaps where unknown tenants are looked for: below the first known tenant, between two
-- known tenants, above the last (the whole range when a queue has none).
gaps as (
    select d.queue, d.discovery_floor, g.lo, g.hi
    from demand d
    cross join lateral (
        select lag(k.tenant) over (order by k.tenant) as lo, k.tenant as hi
        from known k
        where k.queue = d.queue
        union all
        select max(k.tenant), null
        from known k
        where k.queue = d.queue
    ) g
),
-- A skip scan in each gap, one probe per tenant. The four shapes keep each probe's bounds
-- plain, so each is a seek whatever the generic plan.
discovered (queue, discovery_floor, tenant, head_rank, head_at, head_id, hi, n) as (
    select g.queue, g.discovery_floor, p.tenant, p.rank, p.run_at, p.id, g.hi, 1
    from gaps g
    cross join lateral (
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where g.lo is null and g.hi is null
              and j.queue = g.queue
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= g.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where g.lo is null and g.hi is not null
              and j.queue = g.queue
              and coalesce(j.tenant_id, '') < g.hi
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= g.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where g.lo is not null and g.hi is not null
              and j.queue = g.queue
              and coalesce(j.tenant_id, '') > g.lo
              and coalesce(j.tenant_id, '') < g.hi
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= g.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where g.lo is not null and g.hi is null
              and j.queue = g.queue
              and coalesce(j.tenant_id, '') > g.lo
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= g.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
    ) p
    union all
    select s.queue, s.discovery_floor, p.tenant, p.rank, p.run_at, p.id, s.hi, s.n + 1
    from discovered s
    cross join lateral (
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where s.hi is null
              and j.queue = s.queue
              and coalesce(j.tenant_id, '') > s.tenant
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= s.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, -j.priority as rank, j.run_at, j.id
            from {schema}.x_jobs j
            where s.hi is not null
              and j.queue = s.queue
              and coalesce(j.tenant_id, '') > s.tenant
              and coalesce(j.tenant_id, '') < s.hi
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and j.run_at >= s.discovery_floor
            order by coalesce(j.tenant_id, ''), -j.priority, j.run_at, j.id
            limit 1
        )
    ) p
    where s.n < 64
),
-- Every tenant with a claimable row; a queue serves at most 64 of them per claim, starting
-- after the tenant served last ($6) and wrapping around, as job_claim does.
heads as (
    select queue, tenant, head_rank, head_at, head_id, true as known
    from known_heads where head_id is not null
    union all
    select queue, tenant, head_rank, head_at, head_id, false from discovered
),
chosen as (
    select h.queue, h.tenant, h.head_rank, h.head_at, h.head_id, h.known,
           row_number() over (partition by h.queue order by h.tenant <= $6, h.tenant) as k
    from heads h
),
-- The classes of each discovered tenant served, from its head's onwards (one probe past each).
discovered_classes (queue, tenant, head_rank, head_at, head_id, rank) as (
    select t.queue, t.tenant, t.head_rank, t.head_at, t.head_id, t.head_rank
    from chosen t
    where t.k <= 64 and not t.known
    union all
    select s.queue, s.tenant, s.head_rank, s.head_at, s.head_id, n.rank
    from discovered_classes s
    {next_class}
),
-- And of each known tenant served: its classes from the floor walk, from its head's onwards
-- (walked once: no second probe per class).
classes (queue, tenant, head_rank, head_at, head_id, rank) as (
    select t.queue, t.tenant, t.head_rank, t.head_at, t.head_id, c.rank
    from chosen t
    join known_classes c
      on c.queue = t.queue and c.tenant = t.tenant and c.rank >= t.head_rank
    where t.k <= 64 and t.known
    union all
    select queue, tenant, head_rank, head_at, head_id, rank from discovered_classes
),
-- Lapsed rows with attempts left compete for the slots; lapsed final attempts are buried
-- without spending any (up to 100 per queue per claim), as in job_claim.
lapsed as (
    select l.id, l.queue, l.visible_at as due, l.tenant, l.rank
    from demand d
    cross join lateral (
        select j.id, j.queue, j.visible_at, coalesce(j.tenant_id, '') as tenant, -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = d.queue and j.state = 'running'
          and j.visible_at >= d.lapse_floor and j.visible_at <= $4
          and j.attempt < j.max_attempts
        order by j.visible_at, j.id
        limit d.slots
        for update skip locked
    ) l
),
exhausted as (
    select e.id, e.queue, e.visible_at
    from demand d
    cross join lateral (
        select j.id, j.queue, j.visible_at
        from {schema}.x_jobs j
        where j.queue = d.queue and j.state = 'running'
          and j.visible_at >= d.lapse_floor and j.visible_at <= $4
          and j.attempt >= j.max_attempts
        order by j.visible_at, j.id
        limit 100
        for update skip locked
    ) e
),
queued as (
    select q.id, q.queue, q.run_at as due, q.tenant, q.rank
    from classes t
    join demand d on d.queue = t.queue
    cross join lateral (
        select j.id, j.queue, j.run_at, t.tenant, t.rank
        from {schema}.x_jobs j
        where j.queue = t.queue
          and coalesce(j.tenant_id, '') = t.tenant
          and -j.priority = t.rank
          and j.state in ('ready', 'delayed', 'suspended')
          -- From the head in its own class; from the start of every later class.
          and (j.run_at, j.id) >= (
              case when t.rank = t.head_rank then t.head_at else '-infinity'::timestamptz end,
              case when t.rank = t.head_rank then t.head_id
                   else '00000000-0000-0000-0000-000000000000'::uuid end
          )
          and j.run_at <= $4
        order by j.run_at, j.id
        limit d.slots
        for update skip locked
    ) q
),
-- Each tenant's rows (lapsed and queued alike), highest priority (lowest rank) first, then in
-- due order, make its turns; a queue takes turn 1 of every tenant, then turn 2, ... until its
-- slots are full (within a turn, the higher priority, then the earlier due).
turns as (
    select c.id, c.queue, c.due, c.rank,
           row_number() over (partition by c.queue, c.tenant order by c.rank, c.due, c.id) as turn
    from (
        select id, queue, due, tenant, rank from lapsed
        union all
        select id, queue, due, tenant, rank from queued
    ) c
),
ranked as (
    select t.id,
           row_number() over (partition by t.queue order by t.turn, t.rank, t.due, t.id) as n,
           d.slots
    from turns t
    join demand d on d.queue = t.queue
),
buried as (
    update {schema}.x_jobs j
    set state = case when j.name = any($13::text[]) then 'failed' else 'dead' end,
        visible_at = null,
        last_error = 'LEASE_LAPSED_FINAL_ATTEMPT',
        last_error_code = null,
        updated_at = $4
    from exhausted e
    where j.id = e.id
    returning {j_job_columns}, j.started_at
),
-- A burial counts as dead (or failed), as any settle does.
settled as (
    select name, state, updated_at, started_at, true as counted from buried
),
{count_settled},
claimed as (
{claim_running}
)
select 'job' as kind, {job_columns}, has_steps from claimed
union all
select 'buried' as kind, {job_columns}, false as has_steps from buried
union all
-- The heads: one row per tenant probed (id, run_at and priority null when it had no claimable
-- row) ...
select 'head' as kind,
       h.head_id, null::uuid, null::text, h.queue, null::jsonb, null::text, h.tenant, null::text,
       null::integer, null::integer, h.head_at, -h.head_rank, null::timestamptz,
       null::timestamptz, null::text,
       null::text, null::text, null::bigint, null::timestamptz, null::jsonb, null::text,
       null::text, null::timestamptz, null::jsonb, false
from (
    select queue, tenant, head_rank, head_at, head_id from known_heads
    union all
    select queue, tenant, head_rank, head_at, head_id from discovered
) h
union all
-- ... and one per queue with the earliest lapsed lease it found (null: none).
select 'lapse' as kind,
       null::uuid, null::uuid, null::text, d.queue, null::jsonb, null::text, null::text,
       null::text, null::integer, null::integer, null::timestamptz, null::smallint,
       null::timestamptz, null::timestamptz, null::text, null::text, null::text, null::bigint,
       (
           select min(f.visible_at)
           from (
               select l.due as visible_at from lapsed l where l.queue = d.queue
               union all
               select e.visible_at from exhausted e where e.queue = d.queue
           ) f
       ),
       null::jsonb, null::text, null::text, null::timestamptz, null::jsonb, false
from demand d
