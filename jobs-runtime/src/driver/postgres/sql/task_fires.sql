-- task_fires: each task's last fire (the last occurrence that dispatched), at most $1 rows.
select task, last_occurrence, fired_at
from {schema}.x_scheduler_state
where last_occurrence is not null
order by task
limit $1
