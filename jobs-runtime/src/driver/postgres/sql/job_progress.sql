-- job_progress: records a running job's progress, fenced on the claim.
update {schema}.x_jobs
set progress = $4, updated_at = $5
where id = $1 and state = 'running' and claimed_by = $2 and claims = $3
