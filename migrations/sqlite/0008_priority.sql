-- 0008: priorities (`#[job(priority = N)]`, -5..=5, default 0). Within a queue and a tenant's
-- turn the claim takes the higher priority first, then the earlier run time, so the fair
-- claim's index orders each tenant's rows by priority before run time: the same one index,
-- rebuilt, never a second. x_outbox's `priority` column is added by the migration runner
-- (driver/sqlite/migrate.rs), which SqliteOutbox::install shares, since SQLite cannot add a
-- column only if it is missing.
alter table x_jobs add column priority integer not null default 0;

drop index if exists x_jobs_fair_idx;
create index if not exists x_jobs_fair_idx
    on x_jobs (queue, coalesce(tenant_id, ''), priority desc, run_at, id)
    where state in ('ready', 'delayed', 'suspended');
