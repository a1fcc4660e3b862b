-- On-time starts across processes: SQLite has no NOTIFY, so the due times a later run writes
-- are left where the other processes' wake watchers (driver/sqlite/wake.rs) read them, in the
-- same transaction as the write, by triggers: a row enqueued due later (a delayed job), a
-- running row settled back to ready or suspended with a later run time (a retry after its
-- backoff, a park: a sleep or an event wait's timeout), and a queued row whose run time moved. A watcher reads the hints after the
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

-- A settle to a later run time, and a queued row whose run time moved later than its last
-- change (a debounced enqueue's replaced run time; an event that wakes a parked run, whose run
-- time moves to the event's, so an idle worker of another process resumes it at once).
create trigger if not exists x_job_due_hints_settled
    after update of state, run_at on x_jobs
    when new.state in ('ready', 'delayed', 'suspended')
     and new.run_at > new.updated_at
     and (old.state = 'running' or new.run_at <> old.run_at)
begin
    insert into x_job_due_hints (queue, at) values (new.queue, new.run_at);
end;

create trigger if not exists x_job_due_hints_trim
    after insert on x_job_due_hints
    when new.seq % 64 = 0
begin
    delete from x_job_due_hints where seq <= new.seq - 256;
end;
