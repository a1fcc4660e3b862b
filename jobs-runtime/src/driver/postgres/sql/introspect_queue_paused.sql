-- introspect_queue_paused: the paused queues, sorted, with who paused each.
select queue, paused_at, paused_by from {schema}.x_job_pauses order by queue
