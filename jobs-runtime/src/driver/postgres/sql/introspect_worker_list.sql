-- introspect_worker_list: the workers whose rows have not expired at $1, by id.
select id, host, started_at, queues, slots, in_flight, in_flight_count, heartbeat_at, expires_at,
       settings
from {schema}.x_job_workers
where expires_at > $1
order by id
