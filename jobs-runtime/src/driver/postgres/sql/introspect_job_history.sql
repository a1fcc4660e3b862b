-- introspect_job_history: job $1's history, newest first by (at, seq), at most $3 rows; with
-- $2, only the rows written while the job belonged to tenant $2. Reads x_job_history_job_idx.
select h.job_id, h.at, h.actor, h.verb, h.detail
from {schema}.x_job_history h
where h.job_id = $1
  and ($2::text is null or h.tenant_id = $2)
order by h.at desc, h.seq desc
limit $3
