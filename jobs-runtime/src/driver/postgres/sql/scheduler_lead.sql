-- scheduler_lead: acquires the leader lease row, or renews it for its holder: the same
-- statement. Another holder's row is taken over only once it expired ($2 = now). Answers the
-- row when $1 leads until $3, nothing otherwise. `since` is when this holder took the lease:
-- a renewal keeps it, a takeover sets it to now.
insert into {schema}.x_scheduler_leader as l (name, holder, expires_at, since)
values ('scheduler', $1, $3, $2)
on conflict (name) do update
    set holder = excluded.holder,
        expires_at = excluded.expires_at,
        since = case when l.holder = excluded.holder then coalesce(l.since, excluded.since)
                     else excluded.since end
    where l.holder = excluded.holder or l.expires_at <= $2
returning holder
