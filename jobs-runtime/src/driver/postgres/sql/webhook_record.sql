-- webhook_record: one attempt, and the endpoint's failure run moved in the same statement (a
-- delivered attempt resets it, a failed one adds one); answers the standing after it.
with attempt as (
    insert into {schema}.x_webhook_attempts
        (endpoint_id, event_id, topic, at, status, delivered, error_code)
    values ($1, $2, $3, $4, $5, $6, $7)
)
insert into {schema}.x_webhook_endpoints as e (endpoint_id, consecutive_failures, updated_at)
values ($1, case when $6 then 0 else 1 end, $4)
on conflict (endpoint_id) do update
set consecutive_failures = case when $6 then 0 else e.consecutive_failures + 1 end,
    updated_at = excluded.updated_at
returning consecutive_failures, disabled_at is not null as disabled
