-- 0011: a worker's registry row carries the settings it runs with that the store does not
-- otherwise know (its fleet-wide queue limits, `WorkerBuilder::queue_limits`), as one JSON
-- text (`WorkerSettings`), so the operator sees them and a later setting needs no column of
-- its own. A row written by an older worker reads as no settings.
alter table x_job_workers add column settings text not null default '{}';
