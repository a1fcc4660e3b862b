-- queue_depth: queue_stats's counts less the done rows, each part an index-only scan (0018):
-- the queued rows on x_jobs_fair_idx (a queued row not yet due counts as delayed), the
-- running ones on x_jobs_lapsed_idx, the failed, dead and cancelled ones on x_jobs_ended_idx.
-- Its cost follows those rows, not the table.
select queue,
       state,
       (state in ('ready', 'delayed') and run_at > $1) as not_due,
       count(*) as n,
       min(run_at) as oldest_run_at
from {schema}.x_jobs
where state in ('ready', 'delayed', 'suspended')
group by 1, 2, 3
union all
select queue, 'running', false, count(*), null
from {schema}.x_jobs
where state = 'running'
group by 1
union all
select queue, state, false, count(*), null
from {schema}.x_jobs
where state in ('failed', 'dead', 'cancelled')
group by 1, 2
