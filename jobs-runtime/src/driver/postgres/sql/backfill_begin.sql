-- backfill_begin: adopt this run's own pass (a retry, a resume after a crash), or answer the
-- newest completed pass of the name and tenant (unless forced), or insert a running row. The
-- caller holds a transaction-scoped advisory lock on the name and tenant, so two passes never
-- race past the completed check.
-- $1 name, $2 tenant ('' for none), $3 run_id, $4 new id, $5 job_id, $6 checksum, $7 force, $8 now
with own as (
    select id from {schema}.x_backfills where run_id = $3
), previous as (
    select run_id, checksum
    from {schema}.x_backfills
    where name = $1 and tenant_id = $2 and status = 'completed'
    order by finished_at desc nulls last
    limit 1
), inserted as (
    insert into {schema}.x_backfills
        (id, name, tenant_id, run_id, job_id, checksum, status, forced, started_at, updated_at)
    select $4, $1, $2, $3, $5, $6, 'running', $7, $8, $8
    where not exists (select 1 from own)
      and ($7 or not exists (select 1 from previous))
    on conflict (run_id) do nothing
    returning id
)
select
    exists (select 1 from own)      as adopted,
    exists (select 1 from inserted) as inserted,
    (select run_id from previous)   as previous_run_id,
    (select checksum from previous) as previous_checksum
