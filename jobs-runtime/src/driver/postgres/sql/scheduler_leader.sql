-- scheduler_leader: the scheduler that leads at $1 (now), if its lease has not expired. A row
-- written before 0014 has no `since` until its holder changes: its expiry stands in.
select holder, coalesce(since, expires_at) as since, expires_at
from {schema}.x_scheduler_leader
where name = 'scheduler' and expires_at > $1
