-- 0017: the webhook endpoint ledger (jobs::webhook). One row per endpoint the app delivers to
-- (its run of consecutive failed attempts and when it was disabled), and one row per delivery
-- attempt. No URL, secret or body is stored: an endpoint is the app's id for it.
create table if not exists {schema}.x_webhook_endpoints (
    endpoint_id          text collate "C" primary key,
    consecutive_failures integer     not null default 0,
    disabled_at          timestamptz,
    updated_at           timestamptz not null
);

create table if not exists {schema}.x_webhook_attempts (
    id          bigint generated always as identity primary key,
    endpoint_id text collate "C" not null,
    event_id    text        not null,
    topic       text        not null,
    at          timestamptz not null,
    status      integer,
    delivered   boolean     not null,
    error_code  text
);

-- An endpoint's latest attempts, newest first (webhook_attempts.sql).
create index if not exists x_webhook_attempts_endpoint_idx
    on {schema}.x_webhook_attempts (endpoint_id, id desc);
-- The purge job deletes attempts oldest first, in bounded batches (webhook_attempts_purge.sql).
create index if not exists x_webhook_attempts_at_idx
    on {schema}.x_webhook_attempts (at);
