-- 0001: the queue, its steps, its events, its pauses and its leases.
-- Every name is qualified with the schema the driver was given (the {schema} placeholder).
-- Additive only: a later migration adds columns with "add column if not exists".

create table if not exists {schema}.x_jobs (
    id              uuid        primary key,
    run_id          uuid        not null,
    name            text        not null,
    queue           text        not null,
    input           jsonb       not null,
    idempotency_key text        not null,
    tenant_id       text,
    state           text        not null,
    attempt         integer     not null default 0,
    max_attempts    integer     not null,
    run_at          timestamptz not null,
    created_at      timestamptz not null,
    updated_at      timestamptz not null,
    last_error      text,
    last_error_code text,
    claimed_by      text,
    claims          bigint      not null default 0,
    visible_at      timestamptz,
    progress        jsonb
);

-- The claim reads queued rows in its own order: per queue, oldest run_at first.
create index if not exists x_jobs_claim_idx
    on {schema}.x_jobs (queue, run_at, id)
    where state in ('ready', 'delayed', 'suspended');

-- Running rows whose lease lapsed are claimed again (or buried) in lease order.
create index if not exists x_jobs_lapsed_idx
    on {schema}.x_jobs (queue, visible_at)
    where state = 'running';

-- The idempotency namespace: one live row per (name, tenant, key).
-- The enqueue conflict target spells the same expression.
create unique index if not exists x_jobs_name_tenant_idempotency_live_idx
    on {schema}.x_jobs (name, coalesce(tenant_id, ''), idempotency_key)
    where state in ('ready', 'delayed', 'running', 'suspended');

create index if not exists x_jobs_finished_idx
    on {schema}.x_jobs (updated_at)
    where state in ('done', 'failed', 'dead', 'cancelled');

create index if not exists x_jobs_run_idx on {schema}.x_jobs (run_id);

-- The enqueue wake throttle looks for another row of the queue created in the same slot.
create index if not exists x_jobs_queue_created_idx on {schema}.x_jobs (queue, created_at);

create table if not exists {schema}.x_job_steps (
    run_id     uuid        not null,
    name       text        not null,
    status     text        not null,
    output     jsonb,
    error      text,
    attempts   integer     not null default 0,
    wake_at    timestamptz,
    wait       jsonb,
    updated_at timestamptz not null,
    primary key (run_id, name)
);

-- Open waits only: a publish finds the runs it wakes here.
create index if not exists x_job_steps_waiting_idx
    on {schema}.x_job_steps ((wait ->> 'event'), (wait ->> 'key'))
    where status = 'waiting';

create table if not exists {schema}.x_job_events (
    id           uuid        primary key,
    name         text        not null,
    key          text        not null,
    payload      jsonb       not null,
    published_at timestamptz not null,
    expires_at   timestamptz not null,
    xact         xid8        not null default pg_current_xact_id()
);

create index if not exists x_job_events_lookup_idx
    on {schema}.x_job_events (name, key, published_at);

create index if not exists x_job_events_xact_idx
    on {schema}.x_job_events (name, xact);

create table if not exists {schema}.x_job_pauses (
    queue     text        primary key,
    paused_at timestamptz not null
);

create table if not exists {schema}.x_job_leases (
    lease_key  text        not null,
    slot       integer     not null,
    holder     text        not null,
    expires_at timestamptz not null,
    fence      bigint      not null,
    primary key (lease_key, slot)
);

create index if not exists x_job_leases_expiry_idx on {schema}.x_job_leases (expires_at);

create sequence if not exists {schema}.x_job_lease_fence;

-- The commit wake: a publish inside a transaction wakes again when it commits, so a run that
-- parked on the event while the transaction was open resumes at the commit, not at its next
-- poll. A deferred constraint trigger runs at commit, with a snapshot that sees those waits.
create or replace function {schema}.x_job_events_commit_wake() returns trigger
language plpgsql as $body$
begin
    update {schema}.x_jobs j
    set run_at = least(j.run_at, new.published_at)
    from {schema}.x_job_steps s
    where s.status = 'waiting'
      and s.wait ->> 'event' = new.name
      and s.wait ->> 'key' = new.key
      and j.run_id = s.run_id
      and j.state = 'suspended'
      and j.run_at > new.published_at;
    return null;
end
$body$;

create constraint trigger x_job_events_commit_wake
    after insert on {schema}.x_job_events
    deferrable initially deferred
    for each row execute function {schema}.x_job_events_commit_wake();
