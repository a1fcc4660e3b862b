-- introspect_counter_totals: every job name counters since $1, summed, by name.
select name,
       sum(done)::bigint as done, sum(retried)::bigint as retried, sum(failed)::bigint as failed,
       sum(dead)::bigint as dead, sum(duration_ms)::bigint as duration_ms
from {schema}.x_job_counters
where bucket >= $1
group by name
order by name
