-- group_open: creates group $1 (waiter $2, parent $3, at $4) on its first join, and answers it
-- locked: joins of one group take turns from here, so each appends at the size it read, and a
-- fold of its members' settles waits for the join to commit.
insert into {schema}.x_job_groups (id, waiter, parent_id, created_at)
values ($1, $2, $3, $4)
on conflict (id) do update set waiter = {schema}.x_job_groups.waiter
returning id, waiter, parent_id, size, settled, need, done_at, created_at
