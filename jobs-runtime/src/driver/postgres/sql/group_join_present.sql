-- group_join_present: which of the members $1 a join could not mark still exist (the others
-- are gone, and count as settled at the join).
select id from {schema}.x_jobs where id = any($1::uuid[])
