-- 0010: unique periods (`#[job(unique(for = "1h"))]`). A job enqueued with a period keeps
-- holding its (name, tenant, key) after it finishes, until `unique_until` (its creation plus the
-- period), so an enqueue of the key within the period answers it. The hold lives in the row
-- itself, inside the live-key unique index, which now also takes every row with a mark: one
-- index still decides who holds a key, and neither a crash nor a rolled-back transaction can
-- leave a key held by a job that does not exist. A finished row whose mark lapsed no longer
-- holds its key; the next enqueue or requeue of the key clears the mark (`unique_until = null`,
-- taking the row out of the index) before it inserts. A statement that looks for a holder
-- spells the index's predicate as written here, so SQLite can use the partial index.
-- x_outbox's `unique_for_ms` column is added by the migration runner (driver/sqlite/migrate.rs),
-- which SqliteOutbox::install shares, since SQLite cannot add a column only if it is missing.
alter table x_jobs add column unique_until text;

drop index if exists x_jobs_name_tenant_idempotency_live_idx;
create unique index if not exists x_jobs_name_tenant_idempotency_live_idx
    on x_jobs (name, coalesce(tenant_id, ''), idempotency_key)
    where state in ('ready', 'delayed', 'running', 'suspended') or unique_until is not null;
