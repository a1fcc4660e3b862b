-- 0008: the claim reads queued rows through x_jobs_fair_idx (0003) since it takes turns across
-- tenants; x_jobs_claim_idx no longer serves any statement and only cost every enqueue an index
-- insert. No table changes: this drops an index, nothing else.
drop index if exists {schema}.x_jobs_claim_idx;
