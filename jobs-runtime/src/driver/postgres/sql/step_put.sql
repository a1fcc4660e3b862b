-- step_put: writes a step record only while its job is still running under the claim
-- ($10 job, $11 worker, $12 claim ordinal); the job row is share-locked so the claim cannot be
-- settled or taken over while the write lands. No row written: the fence missed.
-- $13 is 'running', bound by the driver (`execute_fenced` says why it is not a constant).
insert into {schema}.x_job_steps (run_id, name, status, output, error, attempts, wake_at, wait, updated_at)
select $1, $2, $3, $4, $5, $6, $7, $8, $9
where exists (
    select 1 from {schema}.x_jobs
    where id = $10 and state = $13 and claimed_by = $11 and claims = $12
    for share
)
on conflict (run_id, name) do update
set status = excluded.status,
    output = excluded.output,
    error = excluded.error,
    attempts = excluded.attempts,
    wake_at = excluded.wake_at,
    wait = excluded.wait,
    updated_at = excluded.updated_at
