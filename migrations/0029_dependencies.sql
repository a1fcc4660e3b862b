-- 0029: dependencies between jobs (`EnqueueOptions::depends_on`). A dependent whose
-- dependencies have not all settled is stored `suspended` until 9999-12-31 (never due, so no
-- claim reaches it) and is made ready, or cancelled under its policy, when they settle.
--
-- The edges, read both ways: a settled job's dependents by the primary key, a job's own
-- dependencies by the second index.
create table if not exists {schema}.x_job_dependencies (
    job_id     uuid not null,
    depends_on uuid not null,
    primary key (depends_on, job_id)
);
create index if not exists x_job_dependencies_job_idx
    on {schema}.x_job_dependencies (job_id);

-- A dependent's policy when a dependency ends failed, dead or cancelled ('cancel' or 'run_anyway';
-- null: it depends on nothing). `has_dependents` marks a job some other job depends on: set
-- by the dependent's enqueue under the row's lock, so a settle that follows sees it.
-- Columns with constant defaults are added without rewriting the table.
alter table {schema}.x_jobs add column if not exists on_dependency_failure text;
alter table {schema}.x_jobs add column if not exists has_dependents boolean not null default false;

-- Settled jobs whose dependents are still to be judged: written in the settling statement's
-- own transaction by the triggers below (so a crash before the judging loses nothing), and
-- taken by the driver's release pass right after (driver/postgres/dependencies.rs). The
-- triggers' WHEN clauses are checked without calling a function: only rows with dependents
-- pay for them.
create table if not exists {schema}.x_job_releases (
    job_id uuid primary key,
    at     timestamptz not null
);

create or replace function {schema}.x_jobs_note_release() returns trigger
language plpgsql as $body$
begin
    if tg_op = 'DELETE' then
        insert into {schema}.x_job_releases (job_id, at) values (old.id, old.updated_at)
        on conflict do nothing;
        return old;
    end if;
    insert into {schema}.x_job_releases (job_id, at) values (new.id, new.updated_at)
    on conflict do nothing;
    return new;
end
$body$;

drop trigger if exists x_jobs_note_release on {schema}.x_jobs;
create trigger x_jobs_note_release
    after update of state on {schema}.x_jobs
    for each row
    when (new.has_dependents
          and old.state in ('ready', 'delayed', 'running', 'suspended')
          and new.state in ('done', 'failed', 'dead', 'cancelled'))
    execute function {schema}.x_jobs_note_release();

drop trigger if exists x_jobs_note_release_removed on {schema}.x_jobs;
create trigger x_jobs_note_release_removed
    after delete on {schema}.x_jobs
    for each row
    when (old.has_dependents
          and old.state in ('ready', 'delayed', 'running', 'suspended'))
    execute function {schema}.x_jobs_note_release();
