-- 0012: dependencies between jobs (`EnqueueOptions::depends_on`), as Postgres' 0029. A
-- dependent whose dependencies have not all settled is stored `suspended` until 9999-12-31
-- (never due) and is made ready, or cancelled under its policy, when they settle.
create table if not exists x_job_dependencies (
    job_id     blob not null,
    depends_on blob not null,
    primary key (depends_on, job_id)
) without rowid;
create index if not exists x_job_dependencies_job_idx on x_job_dependencies (job_id);

-- A dependent's policy ('cancel' or 'run_anyway'; null: it depends on nothing), and whether some
-- other job depends on this one.
alter table x_jobs add column on_dependency_failure text;
alter table x_jobs add column has_dependents integer not null default 0;

-- Settled jobs whose dependents are still to be judged, noted by the triggers below in the
-- settling statement's own transaction and taken by the driver's release pass right after
-- (driver/sqlite/dependencies.rs). Only rows with dependents fire them.
create table if not exists x_job_releases (
    job_id blob primary key,
    at     text not null
);

create trigger if not exists x_jobs_note_release
    after update of state on x_jobs
    when new.has_dependents
     and old.state in ('ready', 'delayed', 'running', 'suspended')
     and new.state in ('done', 'failed', 'dead', 'cancelled')
begin
    insert or ignore into x_job_releases (job_id, at) values (new.id, new.updated_at);
end;

create trigger if not exists x_jobs_note_release_removed
    after delete on x_jobs
    when old.has_dependents
     and old.state in ('ready', 'delayed', 'running', 'suspended')
begin
    insert or ignore into x_job_releases (job_id, at) values (old.id, old.updated_at);
end;
