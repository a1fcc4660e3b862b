-- group_note: notes group $1 in `x_job_releases` at $2 (0031: a noted id is a settled job's or a
-- group's), in the join's transaction and before the group's lock: the release pass that takes
-- it checks the members the join filed (group_fold.sql), so a member that ended before it was
-- marked, or while the join ran, is counted, even if the process dies right after the join.
insert into {schema}.x_job_releases (job_id, at) values ($1, $2)
on conflict do nothing
