-- On-time starts across processes: SQLite has no NOTIFY, so the due times a later run writes
-- are left where the other processes' wake watchers (driver/sqlite/wake.rs) read them, in the
-- same transaction as the write, by triggers: a row enqueued due later (a delayed job) and a
-- running row settled back to ready or suspended with a later run time (a retry after its
-- backoff, a park: a sleep or an event wait's timeout). A watcher reads the hints after the
-- last it read (`seq`, the rowid: one bounded range read per commit it sees) and arms its
-- worker's timer for each, so an idle worker starts the job when due, not at its next poll.
-- Only the newest hints matter: every 64th hint deletes those 256 older than it, so the table
-- stays a few hundred rows; a watcher behind by more than that leaves the rest to the poll.
-- A hint holds a queue name and a time, never an id, an input or a tenant.
create table if not exists x_job_due_hints (
    seq   integer primary key,
    queue text    not null,
    at    text    not null
);

create trigger if not exists x_job_due_hints_enqueued
    after insert on x_jobs
    when new.run_at > new.created_at
begin
    insert into x_job_due_hints (queue, at) values (new.queue, new.run_at);
end;

create trigger if not exists x_job_due_hints_settled
    after update of state on x_jobs
    when old.state = 'running'
     and new.state in ('ready', 'suspended')
     and new.run_at > new.updated_at
begin
    insert into x_job_due_hints (queue, at) values (new.queue, new.run_at);
end;

create trigger if not exists x_job_due_hints_trim
    after insert on x_job_due_hints
    when new.seq % 64 = 0
begin
    delete from x_job_due_hints where seq <= new.seq - 256;
end;
