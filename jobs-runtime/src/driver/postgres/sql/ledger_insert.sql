-- ledger_insert: every line of one posting, once. A key already stored keeps its lines
-- (on conflict do nothing); the read-back in the same transaction decides whether they match.
-- $1 ledger, $2 tenant ('' for none), $3 posting key, $4 lines, $5 accounts, $6 minors,
-- $7 currencies, $8 scales, $9 run_id, $10 now
insert into {schema}.x_ledger_lines
    (ledger, tenant_id, posting_key, line, account, minor, currency, scale, run_id, posted_at)
select $1, $2, $3, l.line, l.account, l.minor, l.currency, l.scale, $9, $10
from unnest($4::int[], $5::text[], $6::bigint[], $7::text[], $8::smallint[])
    as l(line, account, minor, currency, scale)
on conflict (ledger, tenant_id, posting_key, line) do nothing
