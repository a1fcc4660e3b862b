-- fragment_tenant_classes: spliced where a statement names tenant_classes (in braces), as its
-- `classes (queue, tenant, rank)` CTE over the statement's `tenants (queue, tenant)` CTE: the
-- priority classes each tenant has queued rows in (the rank: the priority negated, highest
-- priority first), found by a skip scan of x_jobs_fair_idx, one probe for the first and one
-- past each (fragment_next_class.sql).
classes (queue, tenant, rank) as (
    select t.queue, t.tenant, c.rank
    from tenants t
    cross join lateral (
        select -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = t.queue
          and coalesce(j.tenant_id, '') = t.tenant
          and j.state in ('ready', 'delayed', 'suspended')
        order by -j.priority
        limit 1
    ) c
    union all
    select s.queue, s.tenant, n.rank
    from classes s
    {next_class}
)
