-- webhook_standing: an endpoint's run of failures and whether it is disabled (no row: a
-- never-seen endpoint, enabled).
select consecutive_failures, disabled_at is not null as disabled
from {schema}.x_webhook_endpoints
where endpoint_id = $1
