-- task_paused: the paused tasks, or ($1 not null) whether that one is: read only when it is due.
select task from {schema}.x_task_pauses where $1::text is null or task = $1 order by task
