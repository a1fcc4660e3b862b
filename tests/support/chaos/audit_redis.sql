-- The chaos audit of a Redis queue, in the side Postgres schema {s}: Redis has no triggers, so
-- each worker process logs what its driver did through its auditing decorator
-- (`tests/bin/audit_driver.rs`). `side_effects` is the Postgres audit's, unchanged (no unique
-- constraint: a second execution of a step is a second row). Times are microseconds on the
-- machine's clock, shared by every process of the test.
create table {s}.side_effects (
    run_id uuid not null, job_id uuid not null, step text not null, token text not null,
    saw text, already_completed bool not null, app text not null, attempt int not null,
    at timestamptz not null default clock_timestamp(), began_us bigint not null default 0
);
-- Each job a claim handed a process: its claim ordinal, the worker id, the process, when the
-- claim was asked (`began_us`) and answered (`returned_us`).
create table {s}.claim_log (
    job_id uuid not null, claims bigint not null, worker text not null, app text not null,
    began_us bigint not null, returned_us bigint not null
);
-- Each fenced write the driver answered as landed: `kind` ack, nack, heartbeat, progress or
-- step; `detail` the nack's target state or the step's status; when it was asked (`began_us`)
-- and when its answer came (`landed_us`).
create table {s}.settle_log (
    job_id uuid not null, claims bigint not null, worker text not null, app text not null,
    kind text not null, detail text not null, run_id uuid, step text,
    began_us bigint not null, landed_us bigint not null
);
