-- 0014: when the scheduler that leads took the lease, so an operator can tell who leads and
-- since when (`jobs tasks`, `Jobs::scheduler_leader`). A renewal by the same holder keeps it.
alter table {schema}.x_scheduler_leader add column if not exists since timestamptz;
