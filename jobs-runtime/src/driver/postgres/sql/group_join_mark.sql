-- group_join_mark: marks the members $1 of a join as having dependents, so each one's settle
-- from now on is noted for the release pass's fold (migrations 0029, 0031), and answers each
-- one marked with its state as of its row lock: a member that settled before is seen settled
-- here, one that settles after waits for the join to commit and is noted. A member another
-- transaction holds locked at this moment (a settle in flight) is skipped, neither marked nor
-- answered: the join asks again (`group_join_mark_wait.sql` after a few rounds). So the join
-- never waits on one member while holding another, which a batched ack holding two siblings in
-- another order would deadlock with.
update {schema}.x_jobs j
set has_dependents = true
where j.id in (
    select x.id from {schema}.x_jobs x
    where x.id = any($1::uuid[])
    for no key update skip locked
)
returning j.id, j.state
