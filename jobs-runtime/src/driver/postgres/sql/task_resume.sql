-- task_resume: answers the row when the task was paused.
delete from {schema}.x_task_pauses where task = $1 returning task
