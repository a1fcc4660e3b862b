-- 0023: the transactional outbox (jobs::outbox). A job is staged here in the caller's own
-- transaction, on the app's database, and a relay publishes committed rows to the job store
-- (this database or another, or Redis). The row's id is the job's id, and its run id is
-- allocated at stage. Published and refused rows are kept as the audit trail until the
-- outbox's purge target deletes them. PostgresOutbox::install runs this same file on an app
-- database of its own: every statement is idempotent. The relay's lease is migration 0032's
-- (databases migrated before it had a holder stamped on each row, which 0032 drops).
create table if not exists {schema}.x_outbox (
    id               uuid        primary key,
    run_id           uuid        not null,
    name             text        not null,
    queue            text        not null,
    input            jsonb       not null,
    idempotency_key  text        not null,
    tenant_id        text,
    max_attempts     integer     not null,
    run_at           timestamptz not null,
    on_conflict      text        not null,
    traceparent      text,
    actor            text,
    staged_at        timestamptz not null,
    publish_attempts integer     not null default 0,
    last_error_code  text,
    last_error_at    timestamptz,
    published_at     timestamptz,
    deduped          boolean,
    refused_at       timestamptz
);

-- The relay's claim order: rows neither published nor refused, by (staged_at, id).
create index if not exists x_outbox_pending_idx
    on {schema}.x_outbox (staged_at, id)
    where published_at is null and refused_at is null;
-- The audit trail, oldest first, for the purge.
create index if not exists x_outbox_published_idx
    on {schema}.x_outbox (published_at)
    where published_at is not null;
create index if not exists x_outbox_refused_idx
    on {schema}.x_outbox (refused_at)
    where refused_at is not null;
