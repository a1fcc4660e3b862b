-- job_claim_known: the claim of job_claim_from, cut down to what a wake needs: per queue ($1
-- queues, $2 free slots), the due rows of the tenants the driver already knows ($6 queue, $7
-- tenant), each read from its floor ($10 rank, $8, $9), taken in turns across those tenants
-- (one per tenant per turn, each tenant's highest priority first, then oldest) and marked
-- running under worker $3 until $5, at $4. A paused queue yields nothing.
--
-- It leaves out what job_claim_from also does on every call: the search for tenants the driver
-- does not know, lapsed leases and burials. The driver runs it only where those cannot be
-- missed for longer than one claim or a few tens of milliseconds, and follows an empty answer
-- with the full statement at once (see floors.rs, `Plan::Known`). Why: its plan is a few nodes
-- instead of about 110, and an idle worker's pickup waited on that fixed cost (0.2 ms against
-- 0.6 ms, measured on one ready row).
--
-- A claim of one queue with one known tenant runs job_claim_one.sql instead (no turns to take).
--
-- Rows are locked FOR UPDATE SKIP LOCKED, and the claim commits without waiting for its WAL
-- flush, as job_claim does (see there).
with recursive demand as (
    select d.queue, d.slots
    from unnest($1::text[], $2::int[]) as d(queue, slots)
    where (select set_config('synchronous_commit', 'off', true)) is not null
      and not exists (select 1 from {schema}.x_job_pauses p where p.queue = d.queue)
),
-- The known tenants' floors, and the priority classes each has queued rows in at or after its
-- floor, found by a skip scan (one probe for the first, one past each), so each class's due
-- rows are read by a seek bounded by `run_at <= now` (see job_claim_one).
known as (
    select k.queue, k.tenant, k.floor_rank, k.floor_at, k.floor_id
    from unnest($6::text[], $7::text[], $8::timestamptz[], $9::uuid[], $10::smallint[])
        as k(queue, tenant, floor_at, floor_id, floor_rank)
    where exists (select 1 from demand d where d.queue = k.queue)
),
{floor_classes},
queued as (
    select q.id, q.queue, q.tenant, q.run_at, q.rank
    from known_classes k
    join demand d on d.queue = k.queue
    cross join lateral (
        select j.id, j.queue, k.tenant, j.run_at, k.rank
        from {schema}.x_jobs j
        where j.queue = k.queue
          and coalesce(j.tenant_id, '') = k.tenant
          and -j.priority = k.rank
          and j.state in ('ready', 'delayed', 'suspended')
          -- From the floor in its own class; from the start of every later class.
          and (j.run_at, j.id) >= (
              case when k.rank = k.floor_rank then k.floor_at else '-infinity'::timestamptz end,
              case when k.rank = k.floor_rank then k.floor_id
                   else '00000000-0000-0000-0000-000000000000'::uuid end
          )
          and j.run_at <= $4
        order by j.run_at, j.id
        limit d.slots
        for update skip locked
    ) q
),
ranked as (
    select r.id, r.n, d.slots
    from (
        select t.id, t.queue,
               row_number() over (partition by t.queue order by t.turn, t.rank, t.run_at, t.id) as n
        from (
            select id, queue, run_at, rank,
                   row_number() over (partition by queue, tenant order by rank, run_at, id) as turn
            from queued
        ) t
    ) r
    join demand d on d.queue = r.queue
)
{claim_running}
