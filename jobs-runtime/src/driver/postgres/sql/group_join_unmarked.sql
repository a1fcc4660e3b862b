-- group_join_unmarked: the members $1 still unmarked after a round of group_join_mark (held by
-- another transaction then); a member gone needs no mark.
select id from {schema}.x_jobs where id = any($1::uuid[]) and not has_dependents
