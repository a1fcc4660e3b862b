-- webhook_disable: refuses further deliveries to the endpoint; an endpoint already disabled
-- keeps its first disabling time.
insert into {schema}.x_webhook_endpoints as e (endpoint_id, disabled_at, updated_at)
values ($1, $2, $2)
on conflict (endpoint_id) do update
set disabled_at = coalesce(e.disabled_at, excluded.disabled_at),
    updated_at = excluded.updated_at
