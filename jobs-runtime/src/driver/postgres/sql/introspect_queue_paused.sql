-- introspect_queue_paused: the paused queues, sorted.
select queue, paused_at from {schema}.x_job_pauses order by queue
