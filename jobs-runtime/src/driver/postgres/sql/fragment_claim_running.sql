-- fragment_claim_running: spliced where a claim statement names claim_running (in braces): the
-- UPDATE that hands the claimer the rows its CTE `ranked` (id, n, slots) placed within their
-- queue's slots. Each row turns running with one more attempt and one more claim, claimed by
-- $3, visible to other claimers again at $5 (its lease), started and updated at $4 (now); it
-- answers the job's columns and whether the run has steps stored. Every claim statement (the
-- full search, the claim from the floors, the known-tenant claim and its one-tenant form) hands
-- rows over this way.
update {schema}.x_jobs j
set state = 'running',
    attempt = j.attempt + 1,
    claims = j.claims + 1,
    claimed_by = $3,
    visible_at = $5,
    updated_at = $4,
    started_at = $4
from ranked r
where r.n <= r.slots and j.id = r.id
returning {j_job_columns},
          exists (select 1 from {schema}.x_job_steps s where s.run_id = j.run_id) as has_steps
