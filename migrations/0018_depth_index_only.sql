-- 0018: a queue's depth is read from indexes alone (an index-only scan), never from the jobs
-- table, whose bulk is done rows: the queued rows from x_jobs_fair_idx, which now carries each
-- row's state (a non-key column, so the claim walks it as before and no index is added to the
-- enqueue's path), the running rows from x_jobs_lapsed_idx, and the failed, dead and
-- cancelled rows from a partial index of their own (written only when a job ends that way).
-- Rebuilding x_jobs_fair_idx locks the table for writes while it builds.
drop index if exists {schema}.x_jobs_fair_idx;
create index if not exists x_jobs_fair_idx
    on {schema}.x_jobs (queue, (coalesce(tenant_id, '')), run_at, id) include (state)
    where state in ('ready', 'delayed', 'suspended');

create index if not exists x_jobs_ended_idx
    on {schema}.x_jobs (queue, state)
    where state in ('failed', 'dead', 'cancelled');
