-- backfill_lock: serializes backfill_begin per name and tenant, until the transaction ends.
select pg_advisory_xact_lock(hashtext('jobs.backfill:{schema}:' || $1 || ':' || $2))
