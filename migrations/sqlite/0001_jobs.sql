-- The SQLite driver's schema (jobs::driver::SqliteDriver), one file per version as for
-- Postgres beside it. The same tables and columns as the Postgres schema, in SQLite's terms:
--
-- - timestamps are TEXT in one fixed width, `YYYY-MM-DDTHH:MM:SS.ffffffZ` (microseconds, UTC),
--   so text order is time order and `<=` compares instants; the driver binds every timestamp
--   in that form (driver/sqlite/time.rs) and never reads SQLite's clock;
-- - ids are 16-byte BLOBs (UUIDv7 bytes sort by time); JSON is TEXT; booleans are 0 / 1;
-- - arrays (a worker's queues and in-flight ids) are JSON arrays.
--
-- SQLite has one writer at a time, so the claim needs no row locks: it runs in a
-- `BEGIN IMMEDIATE` transaction, which no other writer (thread or process) can interleave.

create table if not exists x_jobs (
    id              blob    primary key,
    run_id          blob    not null,
    name            text    not null,
    queue           text    not null,
    input           text    not null,
    idempotency_key text    not null,
    tenant_id       text,
    state           text    not null,
    attempt         integer not null default 0,
    max_attempts    integer not null,
    run_at          text    not null,
    created_at      text    not null,
    updated_at      text    not null,
    last_error      text,
    last_error_code text,
    claimed_by      text,
    claims          integer not null default 0,
    visible_at      text,
    progress        text,
    traceparent     text,
    started_at      text
) without rowid;

-- The claim: queued rows per queue and tenant in due order (the fair claim's turns).
create index if not exists x_jobs_fair_idx
    on x_jobs (queue, coalesce(tenant_id, ''), run_at, id)
    where state in ('ready', 'delayed', 'suspended');

-- Lapsed leases: running rows per queue by the end of their invisibility.
create index if not exists x_jobs_lapsed_idx
    on x_jobs (queue, visible_at)
    where state = 'running';

-- One live job per (name, tenant, idempotency key).
create unique index if not exists x_jobs_name_tenant_idempotency_live_idx
    on x_jobs (name, coalesce(tenant_id, ''), idempotency_key)
    where state in ('ready', 'delayed', 'running', 'suspended');

-- Retention: finished rows by when they settled.
create index if not exists x_jobs_finished_idx
    on x_jobs (updated_at)
    where state in ('done', 'failed', 'dead', 'cancelled');

create index if not exists x_jobs_run_idx on x_jobs (run_id);

-- The operator's list, newest first.
create index if not exists x_jobs_created_idx on x_jobs (created_at desc, id desc);

create table if not exists x_job_steps (
    run_id     blob    not null,
    name       text    not null,
    status     text    not null,
    output     text,
    error      text,
    attempts   integer not null default 0,
    wake_at    text,
    wait       text,
    updated_at text    not null,
    primary key (run_id, name)
) without rowid;

create index if not exists x_job_steps_waiting_idx
    on x_job_steps (wait ->> 'event', wait ->> 'key')
    where status = 'waiting';

-- Events. `seq` is the mark a wait draws: SQLite commits one writer at a time, so a later
-- commit always holds a larger seq, and "stored after the mark" is "seq > mark".
create table if not exists x_job_events (
    seq          integer primary key autoincrement,
    id           blob    not null unique,
    name         text    not null,
    key          text    not null,
    payload      text    not null,
    published_at text    not null,
    expires_at   text    not null
);

create index if not exists x_job_events_lookup_idx on x_job_events (name, key, seq);
create index if not exists x_job_events_expiry_idx on x_job_events (expires_at);

-- An event wakes the runs parked waiting for it, in the publishing transaction: if that
-- transaction rolls back, so does the wake.
create trigger if not exists x_job_events_wake
    after insert on x_job_events
begin
    update x_jobs
    set run_at = new.published_at
    where state = 'suspended'
      and run_at > new.published_at
      and run_id in (
          select s.run_id from x_job_steps s
          where s.status = 'waiting'
            and s.wait ->> 'event' = new.name
            and s.wait ->> 'key' = new.key
      );
end;

create table if not exists x_job_pauses (
    queue     text primary key,
    paused_at text not null
);

create table if not exists x_job_leases (
    lease_key  text    not null,
    slot       integer not null,
    holder     text    not null,
    expires_at text    not null,
    fence      integer not null,
    primary key (lease_key, slot)
) without rowid;

create index if not exists x_job_leases_expiry_idx on x_job_leases (expires_at);

-- Fencing tokens: one counter, moved in the writing transaction.
create table if not exists x_job_lease_fence (
    id    integer primary key check (id = 1),
    value integer not null
);
insert or ignore into x_job_lease_fence (id, value) values (1, 0);

create table if not exists x_scheduler_leader (
    name       text primary key,
    holder     text not null,
    expires_at text not null,
    since      text
);

create table if not exists x_scheduler_state (
    task            text primary key,
    watermark       text not null,
    last_occurrence text,
    fired_at        text
);

create table if not exists x_task_pauses (
    task      text primary key,
    paused_at text not null
);

create table if not exists x_backfills (
    id             blob    primary key,
    name           text    not null,
    tenant_id      text    not null default '',
    run_id         blob    not null unique,
    job_id         blob    not null,
    checksum       text    not null,
    status         text    not null check (status in ('running', 'completed', 'failed')),
    forced         integer not null default 0,
    batches        integer not null default 0,
    rows_processed integer not null default 0,
    last_cursor    text,
    started_at     text    not null,
    updated_at     text    not null,
    finished_at    text
);

create index if not exists x_backfills_name_idx
    on x_backfills (name, tenant_id, status, finished_at desc);
create index if not exists x_backfills_started_idx
    on x_backfills (started_at desc, id desc);

create table if not exists x_ledger_lines (
    ledger      text    not null,
    tenant_id   text    not null default '',
    posting_key text    not null,
    line        integer not null check (line >= 0),
    account     text    not null check (trim(account) <> ''),
    minor       integer not null,
    currency    text    not null check (length(currency) = 3 and currency = upper(currency)
                                        and currency glob '[A-Z][A-Z][A-Z]'),
    scale       integer,
    run_id      blob    not null,
    posted_at   text    not null,
    primary key (ledger, tenant_id, posting_key, line)
) without rowid;

-- The operator counters: one delta row per settle, folded by the scheduler leader's rollup.
create table if not exists x_job_counters (
    name        text    not null,
    width_secs  integer not null,
    bucket      text    not null,
    done        integer not null default 0,
    retried     integer not null default 0,
    failed      integer not null default 0,
    dead        integer not null default 0,
    duration_ms integer not null default 0
);

create index if not exists x_job_counters_name_bucket_idx on x_job_counters (name, bucket);

-- Counted as Postgres counts in the settling statement: a running row that settles done,
-- failed or dead, or goes back to ready on a counted attempt (its attempt not handed back).
-- A suspension, a cancel and an uncounted hand-back add nothing.
create trigger if not exists x_job_counters_count
    after update of state on x_jobs
    when old.state = 'running'
     and (new.state in ('done', 'failed', 'dead')
          or (new.state = 'ready' and new.attempt >= old.attempt))
begin
    insert into x_job_counters (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
    values (
        new.name,
        60,
        substr(new.updated_at, 1, 16) || ':00.000000Z',
        new.state = 'done',
        new.state = 'ready',
        new.state = 'failed',
        new.state = 'dead',
        -- Whole milliseconds, floored as Postgres floors them, in integer microseconds:
        -- julianday() is a double, whose difference of two instants can fall a hair short of
        -- a whole millisecond. The seconds come from the form without its fraction (SQLite
        -- rounds a fraction to milliseconds, which can carry into the next second).
        max(0, ((cast(strftime('%s', substr(new.updated_at, 1, 19)) as integer) * 1000000
                 + cast(substr(new.updated_at, 21, 6) as integer))
                - (cast(strftime('%s', substr(coalesce(old.started_at, new.updated_at), 1, 19))
                        as integer) * 1000000
                   + cast(substr(coalesce(old.started_at, new.updated_at), 21, 6) as integer)))
               / 1000)
    );
end;

create table if not exists x_job_workers (
    id              text    primary key,
    host            text    not null,
    started_at      text    not null,
    queues          text    not null,
    slots           integer not null,
    in_flight       text    not null,
    in_flight_count integer not null,
    heartbeat_at    text    not null,
    expires_at      text    not null
);
