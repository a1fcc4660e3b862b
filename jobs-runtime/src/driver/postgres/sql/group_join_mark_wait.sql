-- group_join_mark_wait: group_join_mark for members still held after its rounds, waiting for
-- their locks, taken in id order.
update {schema}.x_jobs j
set has_dependents = true
where j.id in (
    select x.id from {schema}.x_jobs x
    where x.id = any($1::uuid[])
    order by x.id
    for no key update
)
returning j.id, j.state
