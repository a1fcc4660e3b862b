-- queue_stats: counts per queue and state; a queued row not yet due counts as delayed.
select queue,
       state,
       (state in ('ready', 'delayed') and run_at > $1) as not_due,
       count(*) as n,
       min(run_at) as oldest_run_at
from {schema}.x_jobs
group by 1, 2, 3
