-- webhook_enable: the app's decision to deliver again: enabled, its failure run reset.
update {schema}.x_webhook_endpoints
set consecutive_failures = 0, disabled_at = null
where endpoint_id = $1
