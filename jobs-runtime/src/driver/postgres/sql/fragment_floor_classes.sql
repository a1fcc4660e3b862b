-- fragment_floor_classes: spliced where a claim names floor_classes (in braces), as its
-- `known_classes` CTE over the claim's `known (queue, tenant, floor_rank, floor_at, floor_id)`
-- CTE (the tenants the driver knows, with their floors): the priority classes each known tenant
-- has queued rows in at or after its floor (the rank: the priority negated, highest priority
-- first), found by a skip scan of x_jobs_fair_idx, one probe for the first and one past each
-- (fragment_next_class.sql).
known_classes (queue, tenant, floor_rank, floor_at, floor_id, rank) as (
    select k.queue, k.tenant, k.floor_rank, k.floor_at, k.floor_id, c.rank
    from known k
    cross join lateral (
        select -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = k.queue
          and coalesce(j.tenant_id, '') = k.tenant
          and j.state in ('ready', 'delayed', 'suspended')
          and (-j.priority, j.run_at, j.id) >= (k.floor_rank, k.floor_at, k.floor_id)
        order by -j.priority, j.run_at, j.id
        limit 1
    ) c
    union all
    select s.queue, s.tenant, s.floor_rank, s.floor_at, s.floor_id, n.rank
    from known_classes s
    {next_class}
)
