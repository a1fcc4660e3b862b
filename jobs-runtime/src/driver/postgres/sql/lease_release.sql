-- lease_release: gives back the grant identified by its fence; another holder's grant stays.
delete from {schema}.x_job_leases
where lease_key = $1 and slot = $2 and fence = $3
