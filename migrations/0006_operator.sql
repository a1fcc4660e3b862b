-- 0006: the operator surface. Per-job counters moved by the settle itself, the worker registry.
-- Every name is qualified with the schema the driver was given (the {schema} placeholder).
-- Queue pauses live in x_job_pauses (0001), which the claim already reads.

-- When the current attempt started: set by the claim (through the trigger below), read by the
-- counters for the time an attempt took.
alter table {schema}.x_jobs add column if not exists started_at timestamptz;

-- A claim moves the claim ordinal: the attempt starts at the claim time (its updated_at).
-- The WHEN clause is checked without calling the function, so only claimed rows pay for it.
create or replace function {schema}.x_jobs_attempt_started() returns trigger
language plpgsql as $body$
begin
    new.started_at := new.updated_at;
    return new;
end
$body$;

create trigger x_jobs_attempt_started
    before update on {schema}.x_jobs
    for each row
    when (new.claims is distinct from old.claims)
    execute function {schema}.x_jobs_attempt_started();

-- Counter rows: one per job name, bucket width and bucket once rolled up. Settles append delta
-- rows (no row is ever updated in place, so settling workers never wait on each other), and
-- the rollup folds them: duplicates of one bucket into one row, buckets past their tier into
-- the next tier (1 minute for 24 hours, 5 minutes for 7 days, 1 hour for 30 days), and drops
-- what is older.
create table if not exists {schema}.x_job_counters (
    name        text        not null,
    width_secs  integer     not null,
    bucket      timestamptz not null,
    done        bigint      not null default 0,
    retried     bigint      not null default 0,
    failed      bigint      not null default 0,
    dead        bigint      not null default 0,
    duration_ms bigint      not null default 0
);

create index if not exists x_job_counters_name_bucket_idx
    on {schema}.x_job_counters (name, bucket);

-- The counters move in the statement that settles the rows: once per statement (a batched ack
-- adds one delta row per job name), from the rows that left running. A counted retry keeps its
-- attempt number, an uncounted hand-back (a shed, a drain) lowers it and adds nothing, as a
-- suspension and a cancel add nothing. A burial by the claim counts as dead.
create or replace function {schema}.x_job_counters_count() returns trigger
language plpgsql as $body$
begin
    insert into {schema}.x_job_counters
        (name, width_secs, bucket, done, retried, failed, dead, duration_ms)
    select n.name,
           60,
           to_timestamp(floor(extract(epoch from n.updated_at) / 60) * 60),
           count(*) filter (where n.state = 'done'),
           count(*) filter (where n.state = 'ready'),
           count(*) filter (where n.state = 'failed'),
           count(*) filter (where n.state = 'dead'),
           coalesce(sum(floor(extract(epoch from (n.updated_at - coalesce(o.started_at, n.updated_at))) * 1000)), 0)::bigint
    from x_jobs_settled_new n
    join x_jobs_settled_old o on o.id = n.id
    where o.state = 'running'
      and (n.state in ('done', 'failed', 'dead')
           or (n.state = 'ready' and n.attempt >= o.attempt))
    group by 1, 3;
    return null;
end
$body$;

create trigger x_job_counters_count
    after update on {schema}.x_jobs
    referencing old table as x_jobs_settled_old new table as x_jobs_settled_new
    for each statement
    execute function {schema}.x_job_counters_count();

-- The worker registry: one row per live worker, refreshed by its heartbeat, expired one
-- visibility timeout after the last one, deleted by a graceful stop.
create table if not exists {schema}.x_job_workers (
    id              text        primary key,
    host            text        not null,
    started_at      timestamptz not null,
    queues          text[]      not null,
    slots           integer     not null,
    in_flight       uuid[]      not null,
    in_flight_count integer     not null,
    heartbeat_at    timestamptz not null,
    expires_at      timestamptz not null
);

-- The job list reads newest first by (created_at, id), filtered or not.
create index if not exists x_jobs_created_idx on {schema}.x_jobs (created_at desc, id desc);
