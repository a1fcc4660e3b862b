-- job_progress: records a running job's progress, fenced on the claim.
-- $6 is 'running', bound by the driver (`execute_fenced` says why it is not a constant).
update {schema}.x_jobs
set progress = $4, updated_at = $5
where id = $1 and state = $6 and claimed_by = $2 and claims = $3
