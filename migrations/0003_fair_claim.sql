-- 0003: the fair claim reads queued rows per tenant: per queue, per tenant, oldest run_at first.
-- The claim walks this index one tenant at a time (a skip scan), so a tenant with 50,000 ready
-- rows costs it one probe, like a tenant with one.
create index if not exists x_jobs_fair_idx
    on {schema}.x_jobs (queue, (coalesce(tenant_id, '')), run_at, id)
    where state in ('ready', 'delayed', 'suspended');
