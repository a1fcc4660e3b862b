-- The chaos audit's triggers on SQLite, for one connection: temporary triggers fire only for
-- that connection's changes, so '{app}' (the process's name, written in) names who claimed or
-- settled, as `application_name` does on Postgres. The same cases as audit_postgres.sql.
-- (A trigger's INSERT names its table unqualified: SQLite finds it in `main`.)
create temp trigger chaos_claim_audit after update on main.x_jobs
for each row when new.state = 'running' and new.claims is not old.claims
begin
    insert into claim_log (job_id, claims, worker, app, stolen)
    values (new.id, new.claims, new.claimed_by, '{app}',
            old.state = 'running' and old.visible_at > new.updated_at);
end;
create temp trigger chaos_settle_audit after update on main.x_jobs
for each row when old.state = 'running' and new.state <> 'running'
begin
    insert into settle_log
        (job_id, claims, worker, state, settler_app, claimer_app, claimer_worker, kind, lapsed)
    values (
        old.id, old.claims, old.claimed_by, new.state, '{app}',
        (select c.app from claim_log c where c.job_id = old.id and c.claims = old.claims limit 1),
        (select c.worker from claim_log c where c.job_id = old.id and c.claims = old.claims limit 1),
        case when new.last_error = 'LEASE_LAPSED_FINAL_ATTEMPT' and new.state in ('dead', 'failed')
                  and old.visible_at <= new.updated_at then 'buried'
             when new.state = 'cancelled' then 'cancelled'
             else 'settle' end,
        old.visible_at < new.updated_at
    );
end;
