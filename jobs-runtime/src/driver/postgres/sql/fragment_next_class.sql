-- fragment_next_class: the next priority class of a queued tenant's rows after the class `s`
-- (queue, tenant, rank = -priority) a recursive walk stands on: one probe of x_jobs_fair_idx,
-- answered as `n.rank`. The claim statements walk each tenant's classes with it.
cross join lateral (
        select -j.priority as rank
        from {schema}.x_jobs j
        where j.queue = s.queue
          and coalesce(j.tenant_id, '') = s.tenant
          and j.state in ('ready', 'delayed', 'suspended')
          and -j.priority > s.rank
        order by -j.priority
        limit 1
    ) n