-- The chaos audit on Postgres, in schema {s}. `side_effects` has no unique constraint: a
-- second execution of a step is a second row. `claim_log` and `settle_log` are written by a
-- trigger on `x_jobs` in the session that made the change, so
-- `current_setting('application_name')` names the worker process. A claim of a row still
-- running under an unlapsed lease is `stolen`.
create table {s}.side_effects (
    run_id uuid not null, job_id uuid not null, step text not null, token text not null,
    saw text, already_completed bool not null, app text not null, attempt int not null,
    at timestamptz not null default clock_timestamp(), began_us bigint not null default 0
);
create table {s}.claim_log (
    job_id uuid not null, claims bigint not null, worker text, app text not null,
    stolen bool not null, at timestamptz not null default clock_timestamp()
);
create table {s}.settle_log (
    job_id uuid not null, claims bigint not null, worker text, state text not null,
    settler_app text not null, claimer_app text, claimer_worker text, kind text not null,
    lapsed bool not null, at timestamptz not null default clock_timestamp()
);
create function {s}.chaos_audit() returns trigger language plpgsql as $body$
declare
    claimer record;
begin
    if new.state = 'running' and new.claims is distinct from old.claims then
        insert into {s}.claim_log (job_id, claims, worker, app, stolen)
        values (new.id, new.claims, new.claimed_by, current_setting('application_name'),
                old.state = 'running' and old.visible_at > new.updated_at);
    elsif old.state = 'running' and new.state <> 'running' then
        select c.app, c.worker into claimer from {s}.claim_log c
        where c.job_id = old.id and c.claims = old.claims;
        insert into {s}.settle_log
            (job_id, claims, worker, state, settler_app, claimer_app, claimer_worker, kind, lapsed)
        values (
            old.id, old.claims, old.claimed_by, new.state, current_setting('application_name'),
            claimer.app, claimer.worker,
            case when new.last_error = 'LEASE_LAPSED_FINAL_ATTEMPT' and new.state in ('dead', 'failed')
                      and old.visible_at <= new.updated_at then 'buried'
                 when new.state = 'cancelled' then 'cancelled'
                 else 'settle' end,
            old.visible_at < new.updated_at
        );
    end if;
    return null;
end
$body$;
create trigger chaos_audit after update on {s}.x_jobs
for each row execute function {s}.chaos_audit();
