-- 0019: a job's history: every operator act on a job (requeue, requeue from a step, cancel,
-- promote, remove, and the bulk verbs, one row per job moved) appends a row here, written by the
-- statement or transaction that acts, so no act lands without its row. Who (the actor the act
-- named: an operator's identity, or null), when, what (the verb, and a detail: the step a
-- requeue starts from, `bulk` for a bulk verb's rows). The job's tenant is copied so a tenant's
-- operator reads only its own rows. No foreign key to x_jobs: a removed job's history stays
-- until the purge of finished jobs deletes it (job_purge, then history_purge.sql).
create table if not exists {schema}.x_job_history (
    seq       bigint generated always as identity primary key,
    job_id    uuid        not null,
    tenant_id text,
    at        timestamptz not null,
    actor     text,
    verb      text        not null,
    detail    text
);

-- A job's history, newest first (introspect_job_history.sql).
create index if not exists x_job_history_job_idx
    on {schema}.x_job_history (job_id, at desc, seq desc);
-- The purge looks for the rows of gone jobs oldest first (history_purge.sql).
create index if not exists x_job_history_at_idx
    on {schema}.x_job_history (at);

-- Who paused a queue (introspect_queue_pause.sql); null for a pause that named no one.
alter table {schema}.x_job_pauses add column if not exists paused_by text;
