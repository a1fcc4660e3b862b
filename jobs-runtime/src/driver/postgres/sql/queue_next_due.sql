-- queue_next_due: each queue of $1's earliest run time after $2 among its rows waiting for
-- their time (delayed rows, ready rows backing off after a failure or handed back until later,
-- suspended rows: the states x_jobs_fair_idx holds), one row per queue that has one. A worker
-- reads it when it starts and when its LISTEN session is proven again, and arms its due timer
-- with it, so a due time announced while it was not listening starts on time.
--
-- What it costs: x_jobs_fair_idx orders a queue's rows by tenant, then priority class, then run
-- time, so no one seek finds a queue's earliest later run time, and a plain min() would walk
-- the queue's whole backlog. Instead a skip scan finds each tenant (one index probe each, at
-- most $3 per queue, in tenant order), each tenant's priority classes (one probe each, at
-- most 11: fragment_tenant_classes.sql, as the claims walk them), and each class's first row after
-- $2 (one seek): about 1 + T + 2C probes per queue for T tenants holding C classes in all,
-- whatever the number of rows queued. A queue with more than $3 tenants answers the earliest
-- among its first $3 (never a time later than one of theirs), and the poll covers the rest.
-- It reads, never locks or writes.
with recursive tenants (queue, tenant, n) as (
    select q.queue, t.tenant, 1
    from unnest($1::text[]) as q(queue)
    cross join lateral (
        select coalesce(j.tenant_id, '') as tenant
        from {schema}.x_jobs j
        where j.queue = q.queue
          and j.state in ('ready', 'delayed', 'suspended')
        order by coalesce(j.tenant_id, '')
        limit 1
    ) t
    union all
    select s.queue, nx.tenant, s.n + 1
    from tenants s
    cross join lateral (
        select coalesce(j.tenant_id, '') as tenant
        from {schema}.x_jobs j
        where j.queue = s.queue
          and j.state in ('ready', 'delayed', 'suspended')
          and coalesce(j.tenant_id, '') > s.tenant
        order by coalesce(j.tenant_id, '')
        limit 1
    ) nx
    where s.n < $3
),
{tenant_classes}
select k.queue, min(f.run_at) as at
from classes k
cross join lateral (
    select j.run_at
    from {schema}.x_jobs j
    where j.queue = k.queue
      and coalesce(j.tenant_id, '') = k.tenant
      and -j.priority = k.rank
      and j.state in ('ready', 'delayed', 'suspended')
      and j.run_at > $2
    order by j.run_at
    limit 1
) f
group by k.queue
