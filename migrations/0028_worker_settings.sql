-- 0028: a worker's registry row carries the settings it runs with that the store does not
-- otherwise know (its fleet-wide queue limits, `WorkerBuilder::queue_limits`), as one JSON
-- value (`WorkerSettings`), so the operator sees them and a later setting needs no column of
-- its own. A column with a constant default is added without rewriting the table; a row
-- written by an older worker reads as no settings.
alter table {schema}.x_job_workers add column if not exists settings jsonb not null default '{}';
