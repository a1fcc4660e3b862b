-- ledger_lines: one posting's lines, in line order.
-- $1 ledger, $2 tenant ('' for none), $3 posting key
select line, account, minor, currency, scale
from {schema}.x_ledger_lines
where ledger = $1 and tenant_id = $2 and posting_key = $3
order by line
