-- group_join_mark_one: group_join_mark for one member still held after its rounds, waiting for
-- its lock; in a transaction of its own, holding nothing else while it waits.
update {schema}.x_jobs set has_dependents = true where id = $1 and not has_dependents
