-- introspect_worker_announce: writes or refreshes worker $1 registry row, expiring at $9, with
-- the settings it runs with ($10, JSON: its fleet-wide queue limits), and sweeps the rows of
-- other workers that expired before $8 (now).
with swept as (
    delete from {schema}.x_job_workers where expires_at <= $8 and id <> $1
)
insert into {schema}.x_job_workers
    (id, host, started_at, queues, slots, in_flight, in_flight_count, heartbeat_at, expires_at,
     settings)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
on conflict (id) do update
set host = excluded.host,
    started_at = excluded.started_at,
    queues = excluded.queues,
    slots = excluded.slots,
    in_flight = excluded.in_flight,
    in_flight_count = excluded.in_flight_count,
    heartbeat_at = excluded.heartbeat_at,
    expires_at = excluded.expires_at,
    settings = excluded.settings
