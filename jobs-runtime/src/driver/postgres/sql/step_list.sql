-- step_list: every step of a run, read once per attempt.
select run_id, name, status, output, error, attempts, wake_at, wait, updated_at
from {schema}.x_job_steps
where run_id = $1
