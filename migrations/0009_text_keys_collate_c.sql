-- 0009: the queue's text keys compare byte by byte. Names, queues, idempotency keys and tenants
-- are identifiers, never prose: the database's linguistic collation only cost every index
-- insert and lookup a strcoll. Changing the collation rebuilds the indexes on these columns.
alter table {schema}.x_jobs
    alter column name type text collate "C",
    alter column queue type text collate "C",
    alter column idempotency_key type text collate "C",
    alter column tenant_id type text collate "C";
