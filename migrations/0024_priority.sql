-- 0024: priorities (`#[job(priority = N)]`, -5..=5, default 0). Within a queue and a tenant's
-- turn the claim takes the higher priority first, then the earlier run time, so the fair
-- claim's index orders each tenant's rows by the priority negated (ascending, as the claim's
-- row comparisons from a floor need) before run time: the same one index, rebuilt, never a
-- second, so a row carries no more index entries than before. A column with a constant
-- default is added without rewriting the table; rebuilding x_jobs_fair_idx locks the table
-- for writes while it builds. x_outbox carries the priority to the job store; its column is
-- also added by PostgresOutbox::install on an app database of its own (0025).
alter table {schema}.x_jobs add column if not exists priority smallint not null default 0;

drop index if exists {schema}.x_jobs_fair_idx;
create index if not exists x_jobs_fair_idx
    on {schema}.x_jobs (queue, (coalesce(tenant_id, '')), (-priority), run_at, id) include (state)
    where state in ('ready', 'delayed', 'suspended');
