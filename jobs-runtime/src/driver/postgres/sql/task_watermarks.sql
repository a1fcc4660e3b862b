-- task_watermarks: every task's watermark, read when a scheduler starts leading.
select task, watermark from {schema}.x_scheduler_state
