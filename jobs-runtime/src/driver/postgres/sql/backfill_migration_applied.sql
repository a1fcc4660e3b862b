-- backfill_migration_applied: whether the app's migration applied successfully.
-- $1 version (the sqlx migration's version)
select exists(select 1 from _sqlx_migrations where version = $1 and success)
