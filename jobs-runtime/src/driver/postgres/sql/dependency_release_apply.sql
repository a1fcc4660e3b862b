-- dependency_release_apply: the verdicts of one judging pass, at $1: the dependents $2 become
-- ready, due at once, and their queues $3 are announced on the wake channel $4; the dependents
-- $5 are cancelled with the errors $6 (text) and $7 (code). A cancelled one with dependents of
-- its own notes its release (0029's trigger), so the next round judges those.
with released as (
    update {schema}.x_jobs
    set state = 'ready', run_at = $1, updated_at = $1
    where id = any($2::uuid[]) and state = 'suspended'
    returning id
),
cancelled as (
    update {schema}.x_jobs j
    set state = 'cancelled', visible_at = null, updated_at = $1,
        last_error = c.error, last_error_code = c.code
    from unnest($5::uuid[], $6::text[], $7::text[]) as c(id, error, code)
    where j.id = c.id and j.state = 'suspended'
    returning j.id
)
select (select count(*) from released) as released,
       (select count(*) from cancelled) as cancelled,
       (select count(*) from (select pg_notify($4, q) from unnest($3::text[]) as q) n) as announced
