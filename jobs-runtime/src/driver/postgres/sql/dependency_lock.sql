-- dependency_lock: marks the jobs $1 a new dependent names, in its tenant $2, as having
-- dependents, and answers each one's state as of its lock. The row locks serialise the
-- dependent's enqueue with their settles: a settle before it is seen here (the dependent then
-- starts released, or cancelled), one after it carries `has_dependents` and so notes the
-- release (0029's trigger). A job named but not answered does not exist in that tenant.
update {schema}.x_jobs
set has_dependents = true
where id = any($1::uuid[]) and coalesce(tenant_id, '') = coalesce($2, '')
returning id, state
