-- 0006: x_jobs_created_idx in ascending order, as on Postgres (0022). Rows arrive in creation
-- order, so each new entry is the index's largest: ascending, it is appended at the B-tree's
-- right edge, the case SQLite balances cheapest; descending, it went to the left edge, and
-- each full page was rebalanced with its siblings. Measured with Python's sqlite3 (WAL, a
-- commit per row, three rounds of 20,000 rows): 19,492-23,415 rows/s against 17,027-18,195.
-- Every reader orders both columns the same way, which SQLite scans in either direction.
drop index if exists x_jobs_created_idx;
create index if not exists x_jobs_created_idx on x_jobs (created_at, id);
