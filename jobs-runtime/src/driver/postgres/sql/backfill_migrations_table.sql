-- backfill_migrations_table: whether the app's sqlx migrations table is on the search path
-- (a backfill's `requires` reads it).
select to_regclass('_sqlx_migrations') is not null
