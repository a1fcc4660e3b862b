-- 0003: the webhook endpoint ledger (jobs::webhook), as on Postgres (0017): one row per
-- endpoint (its run of consecutive failed attempts, when it was disabled) and one per attempt.
-- No URL, secret or body is stored. Timestamps are fixed-width UTC text (time.rs).
create table x_webhook_endpoints (
    endpoint_id          text    primary key,
    consecutive_failures integer not null default 0,
    disabled_at          text,
    updated_at           text    not null
);

create table x_webhook_attempts (
    id          integer primary key autoincrement,
    endpoint_id text    not null,
    event_id    text    not null,
    topic       text    not null,
    at          text    not null,
    status      integer,
    delivered   integer not null,
    error_code  text
);

create index x_webhook_attempts_endpoint_idx on x_webhook_attempts (endpoint_id, id desc);
create index x_webhook_attempts_at_idx on x_webhook_attempts (at);
