-- webhook_attempts: an endpoint's latest attempts, newest first, on
-- x_webhook_attempts_endpoint_idx.
select endpoint_id, event_id, topic, at, status, delivered, error_code
from {schema}.x_webhook_attempts
where endpoint_id = $1
order by id desc
limit $2
