-- The chaos audit's tables on SQLite (the queue's own file). SQLite has no session name a
-- trigger could read, so the triggers are each worker process's own: temporary triggers on
-- its one writing connection, with its name written in (audit_sqlite_session.sql).
create table side_effects (
    run_id blob not null, job_id blob not null, step text not null, token text not null,
    saw text, already_completed integer not null, app text not null, attempt integer not null,
    began_us integer not null default 0
);
create table claim_log (
    job_id blob not null, claims integer not null, worker text, app text not null,
    stolen integer not null
);
create index claim_log_job_idx on claim_log (job_id, claims);
create table settle_log (
    job_id blob not null, claims integer not null, worker text, state text not null,
    settler_app text not null, claimer_app text, claimer_worker text, kind text not null,
    lapsed integer not null
);
