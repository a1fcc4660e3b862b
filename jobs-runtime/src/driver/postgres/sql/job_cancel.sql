-- job_cancel: a live job becomes cancelled at once. A running one stops at its next heartbeat,
-- which no longer matches (ack, nack and heartbeat are fenced on state = running).
update {schema}.x_jobs
set state = 'cancelled', visible_at = null, updated_at = $2
where id = $1 and state in ('ready', 'delayed', 'running', 'suspended')
returning {job_columns}
