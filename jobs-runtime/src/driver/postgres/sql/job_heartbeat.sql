-- job_heartbeat: extends a running job's invisibility to $4, fenced on the claim. No row: the
-- run was cancelled or re-claimed, and must stop.
update {schema}.x_jobs
set visible_at = $4, updated_at = $5
where id = $1 and state = 'running' and claimed_by = $2 and claims = $3
