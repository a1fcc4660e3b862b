-- event_find: the first event named $1 under key $2 that the wait's snapshot $3 could not see
-- and that has not expired at $4, in (published_at, id) order.
select id, name, key, payload, published_at
from {schema}.x_job_events
where name = $1
  and key = $2
  and not pg_visible_in_snapshot(xact, $3::pg_snapshot)
  and expires_at > $4
order by published_at, id
limit 1
