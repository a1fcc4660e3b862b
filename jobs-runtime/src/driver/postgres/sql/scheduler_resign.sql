-- scheduler_resign: a graceful stop deletes its own lease row, so a standby promotes on its
-- next ask instead of waiting out the TTL. Another holder's row is left alone.
delete from {schema}.x_scheduler_leader where name = 'scheduler' and holder = $1
