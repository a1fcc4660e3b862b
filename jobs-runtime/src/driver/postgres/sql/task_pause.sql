-- task_pause: a row per paused task (idempotent).
insert into {schema}.x_task_pauses (task, paused_at) values ($1, $2) on conflict (task) do nothing
