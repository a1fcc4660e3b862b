-- lease_holders: the live grants of key $1 at $2, in slot order.
select lease_key, slot, holder, fence, expires_at
from {schema}.x_job_leases
where lease_key = $1 and expires_at > $2
order by slot
