-- job_cancel_children: after job_cancel cancelled job $1, its live children (the members of the
-- groups it is the parent of) are cancelled at $2, and theirs, down every live generation, each
-- with a `cancel` row in its history by the same actor $3. Runs in the cancel's transaction.
-- A child that already ended stays as it ended, and the walk does not go through it. Each
-- cancelled child is a group member, marked `has_dependents` at its join, so its settle is noted
-- for the fold by 0029's trigger and counted in its group by the pass after the cancel.
with recursive tree (id) as (
    select m.job_id
    from {schema}.x_job_groups g
    join {schema}.x_job_group_members m on m.group_id = g.id
    join {schema}.x_jobs j on j.id = m.job_id
    where g.parent_id = $1
      and j.state in ('ready', 'delayed', 'running', 'suspended')
    union
    select m.job_id
    from tree t
    join {schema}.x_job_groups g on g.parent_id = t.id
    join {schema}.x_job_group_members m on m.group_id = g.id
    join {schema}.x_jobs j on j.id = m.job_id
    where j.state in ('ready', 'delayed', 'running', 'suspended')
),
cancelled as (
    update {schema}.x_jobs j
    set state = 'cancelled', visible_at = null, updated_at = $2
    where j.id in (select id from tree)
      and j.state in ('ready', 'delayed', 'running', 'suspended')
    returning j.id, j.tenant_id
),
history as (
    insert into {schema}.x_job_history (job_id, tenant_id, at, actor, verb, detail)
    select c.id, c.tenant_id, $2::timestamptz, $3::text, 'cancel', null
    from cancelled c
)
select count(*) from cancelled
