-- 0007: the transactional outbox, as on Postgres (0023): a job staged in the caller's own
-- transaction, published by a relay once it commits. Ids are BLOBs, JSON and timestamps TEXT
-- (time.rs). Published and refused rows are kept until the outbox's purge target deletes
-- them. SqliteOutbox::install runs this same file on an app database of its own: every
-- statement is idempotent. The relay's lease is migration 0015's (files migrated before it had
-- a holder stamped on each row, which 0015 and the outbox's column check drop).
create table if not exists x_outbox (
    id               blob    primary key,
    run_id           blob    not null,
    name             text    not null,
    queue            text    not null,
    input            text    not null,
    idempotency_key  text    not null,
    tenant_id        text,
    max_attempts     integer not null,
    run_at           text    not null,
    on_conflict      text    not null,
    traceparent      text,
    actor            text,
    staged_at        text    not null,
    publish_attempts integer not null default 0,
    last_error_code  text,
    last_error_at    text,
    published_at     text,
    deduped          integer,
    refused_at       text
) without rowid;

-- The relay's claim order: rows neither published nor refused, by (staged_at, id).
create index if not exists x_outbox_pending_idx
    on x_outbox (staged_at, id)
    where published_at is null and refused_at is null;
-- The audit trail, oldest first, for the purge.
create index if not exists x_outbox_published_idx
    on x_outbox (published_at)
    where published_at is not null;
create index if not exists x_outbox_refused_idx
    on x_outbox (refused_at)
    where refused_at is not null;
