-- job_heartbeat: extends a running job's invisibility to $4, fenced on the claim. No row: the
-- run was cancelled or re-claimed, and must stop.
-- $6 is 'running', bound by the driver (`execute_fenced` says why it is not a constant).
update {schema}.x_jobs
set visible_at = $4, updated_at = $5
where id = $1 and state = $6 and claimed_by = $2 and claims = $3
