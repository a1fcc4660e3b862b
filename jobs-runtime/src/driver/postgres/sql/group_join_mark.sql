-- group_join_mark: marks the members $1 of a join that are not yet marked as having dependents,
-- so each one's settle from now on is noted in `x_job_releases` by 0029's trigger, for the
-- release pass's fold (0031). Its own transaction, committed before the join files anything:
-- it skips a member another transaction holds locked (a settle in flight) instead of waiting,
-- so it never waits on one member while holding another, which a batched ack holding two
-- siblings in another order would deadlock with; the driver asks again for the ones left
-- (group_join_unmarked.sql), then waits for each alone (group_join_mark_one.sql).
update {schema}.x_jobs j
set has_dependents = true
where j.id in (
    select x.id from {schema}.x_jobs x
    where x.id = any($1::uuid[]) and not x.has_dependents
    for no key update skip locked
)
returning j.id
