-- lease_acquire_lock: acquirers of one lease key take turns, until their transaction ends.
select pg_advisory_xact_lock(hashtext('jobs.lease:' || $1))
