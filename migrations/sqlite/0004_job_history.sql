-- 0004: a job's history, as on Postgres (0019): every operator act on a job (requeue, requeue
-- from a step, cancel, promote, remove, and the bulk verbs, one row per job moved) appends a row
-- in the transaction that acts. Who (the actor, or null), when (fixed-width UTC text, time.rs),
-- what (the verb, and a detail: the step a requeue starts from, `bulk` for a bulk verb's rows),
-- and the job's tenant, so a tenant's operator reads only its own rows. No foreign key to
-- x_jobs: a removed job's history stays until the purge of finished jobs deletes it.
create table x_job_history (
    seq       integer primary key autoincrement,
    job_id    blob    not null,
    tenant_id text,
    at        text    not null,
    actor     text,
    verb      text    not null,
    detail    text
);

-- A job's history, newest first.
create index x_job_history_job_idx on x_job_history (job_id, at desc, seq desc);
-- The purge looks for the rows of gone jobs oldest first.
create index x_job_history_at_idx on x_job_history (at);

-- Who paused a queue; null for a pause that named no one.
alter table x_job_pauses add column paused_by text;
