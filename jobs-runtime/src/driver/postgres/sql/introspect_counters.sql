-- introspect_counters: job $1 counter buckets since $2, oldest first (delta rows of one bucket
-- summed).
select width_secs, bucket,
       sum(done)::bigint as done, sum(retried)::bigint as retried, sum(failed)::bigint as failed,
       sum(dead)::bigint as dead, sum(duration_ms)::bigint as duration_ms
from {schema}.x_job_counters
where name = $1 and bucket >= $2
group by width_secs, bucket
order by bucket, width_secs
