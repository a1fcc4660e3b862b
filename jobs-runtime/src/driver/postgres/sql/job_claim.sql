-- job_claim: per queue ($1 queues, $2 free slots), takes due rows and marks them running under
-- worker $3 until $5; one statement, however many queues and slots.
--
-- Fair across tenants: the queued rows are taken in turns, one per tenant per turn (each
-- tenant's highest priority first, then oldest run_at; within a turn too, the higher priority
-- first, then the older), so a tenant with a 50,000-row backlog gets one slot in each
-- turn like a tenant with one row, and never makes the others wait behind it. The tenants
-- are found by a skip scan over x_jobs_fair_idx (one index probe per tenant), at most 64 per
-- queue per claim, starting after the tenant served last ($7) and wrapping around.
--
-- Rows are locked FOR UPDATE SKIP LOCKED, so concurrent claimers never wait on each other and
-- never take the same row, and the cost does not grow with the rows queued behind those taken.
-- A running row whose lease lapsed ($4 = now) is taken first; if it already used its final
-- attempt it is buried instead (dead, or failed for the names in $6), with
-- LEASE_LAPSED_FINAL_ATTEMPT, and never handed out. A paused queue yields nothing.
--
-- The claim commits without waiting for its WAL flush (synchronous_commit off for this one
-- transaction, set by the demand's one-time filter). A claim lost to a server crash hands the
-- rows out again, which at-least-once delivery already allows; and every later durable commit
-- (a step, an ack, a nack) flushes the WAL behind it, so no settle can outlive the claim it is
-- fenced on. Enqueues and settles keep synchronous commits.
with recursive demand as (
    select d.queue, d.slots
    from unnest($1::text[], $2::int[]) as d(queue, slots)
    where (select set_config('synchronous_commit', 'off', true)) is not null
      and not exists (select 1 from {schema}.x_job_pauses p where p.queue = d.queue)
),
tenants (queue, tenant, n, wrapped) as (
    select d.queue, t.tenant, 1, t.wrapped
    from demand d
    cross join lateral (
        (
            select coalesce(j.tenant_id, '') as tenant, false as wrapped
            from {schema}.x_jobs j
            where j.queue = d.queue
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and coalesce(j.tenant_id, '') > $7
            order by coalesce(j.tenant_id, '')
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, true as wrapped
            from {schema}.x_jobs j
            where j.queue = d.queue
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and coalesce(j.tenant_id, '') <= $7
            order by coalesce(j.tenant_id, '')
            limit 1
        )
        limit 1
    ) t
    union all
    select s.queue, nx.tenant, s.n + 1, nx.wrapped
    from tenants s
    cross join lateral (
        (
            select coalesce(j.tenant_id, '') as tenant, s.wrapped as wrapped
            from {schema}.x_jobs j
            where j.queue = s.queue
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and coalesce(j.tenant_id, '') > s.tenant
              and (not s.wrapped or coalesce(j.tenant_id, '') <= $7)
            order by coalesce(j.tenant_id, '')
            limit 1
        )
        union all
        (
            select coalesce(j.tenant_id, '') as tenant, true as wrapped
            from {schema}.x_jobs j
            where not s.wrapped
              and j.queue = s.queue
              and j.state in ('ready', 'delayed', 'suspended')
              and j.run_at <= $4
              and coalesce(j.tenant_id, '') <= $7
            order by coalesce(j.tenant_id, '')
            limit 1
        )
        limit 1
    ) nx
    where s.n < 64
),
-- Lapsed rows with attempts left compete for the slots; lapsed final attempts are buried
-- without spending any (up to 100 per queue per claim).
lapsed as (
    select l.id, l.queue, l.visible_at as due, l.tenant, l.rank
    from demand d
    cross join lateral (
        select j.id, j.queue, j.visible_at, coalesce(j.tenant_id, '') as tenant, -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = d.queue and j.state = 'running' and j.visible_at <= $4
          and j.attempt < j.max_attempts
        order by j.visible_at, j.id
        limit d.slots
        for update skip locked
    ) l
),
exhausted as (
    select e.id
    from demand d
    cross join lateral (
        select j.id
        from {schema}.x_jobs j
        where j.queue = d.queue and j.state = 'running' and j.visible_at <= $4
          and j.attempt >= j.max_attempts
        order by j.visible_at, j.id
        limit 100
        for update skip locked
    ) e
),
-- The priority classes each tenant has queued rows in (the rank: the priority negated, highest
-- priority first), found by a skip scan, one probe for the first and one past each; each
-- class's due rows are then read by a seek bounded by `run_at <= now`, so no class's rows that
-- are not yet due are walked.
{tenant_classes},
queued as (
    select q.id, q.queue, q.run_at as due, q.tenant, q.rank
    from classes k
    join demand d on d.queue = k.queue
    cross join lateral (
        select j.id, j.queue, j.run_at, k.tenant, k.rank
        from {schema}.x_jobs j
        where j.queue = k.queue
          and coalesce(j.tenant_id, '') = k.tenant
          and -j.priority = k.rank
          and j.state in ('ready', 'delayed', 'suspended')
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
    set state = case when j.name = any($6::text[]) then 'failed' else 'dead' end,
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
select false as buried, {job_columns}, has_steps from claimed
union all
select true as buried, {job_columns}, false as has_steps from buried
