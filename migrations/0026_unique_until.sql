-- 0026: unique periods (`#[job(unique(for = "1h"))]`). A job enqueued with a period keeps
-- holding its (name, tenant, key) after it finishes, until `unique_until` (its creation plus the
-- period), so an enqueue of the key within the period answers it. The hold lives in the row
-- itself, inside the live-key unique index, which now also takes every row with a mark: one
-- index still decides who holds a key, and neither a crash nor a rolled-back transaction can
-- leave a key held by a job that does not exist. A finished row whose mark lapsed no longer
-- holds its key; the next enqueue or requeue of the key clears the mark (`unique_until = null`,
-- taking the row out of the index) before it inserts. The index keeps its name (a unique
-- violation on it reads as a held key, driver/postgres/introspect.rs). A nullable column is
-- added without rewriting the table; rebuilding the index locks the table for writes while it
-- builds. x_outbox carries the period to the job store (0027).
alter table {schema}.x_jobs add column if not exists unique_until timestamptz;

drop index if exists {schema}.x_jobs_name_tenant_idempotency_live_idx;
create unique index if not exists x_jobs_name_tenant_idempotency_live_idx
    on {schema}.x_jobs (name, coalesce(tenant_id, ''), idempotency_key)
    where state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null;
