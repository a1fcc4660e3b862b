-- dependency_release_judge: the blocked dependents of the settled jobs $1 (suspended until
-- $2 = 9999-12-31), locked, each with its policy, its queue, tenant and priority (for the
-- claim floors), and every job it depends on with
-- that job's state (null: the row is gone). The lock makes two passes judging one dependent
-- take turns; the second sees the first's verdict and skips it (no longer blocked).
select d.id, d.queue, d.tenant_id, d.priority, d.on_dependency_failure, e.depends_on,
       x.state as dependency_state
from {schema}.x_jobs d
join {schema}.x_job_dependencies e on e.job_id = d.id
left join {schema}.x_jobs x on x.id = e.depends_on
where d.id in (
        select s.job_id from {schema}.x_job_dependencies s where s.depends_on = any($1::uuid[])
    )
  and d.state = 'suspended'
  and d.run_at = $2
order by d.id, e.depends_on
for update of d
