-- lease_renew: extends the grant identified by its fence ($3) to $4. No row: the grant was
-- released, or lapsed and granted again (a new fence).
update {schema}.x_job_leases
set expires_at = $4
where lease_key = $1 and slot = $2 and fence = $3
returning lease_key, slot, holder, fence, expires_at
