//! The stores: the driver conformance suite on each driver (`driver_<store>`), and what each
//! store does beyond it, one module per topic and store (`<topic>_<store>`): connections,
//! transactions, the hot path, claims, concurrency, the scheduler, backfills, purges and the
//! operator API on Postgres and SQLite; the Redis harness (`redis_harness`) the Redis driver
//! will stand on.

#[path = "../support/mod.rs"]
mod support;

mod backfill_migrations;
mod backfill_postgres;
mod cluster_redis;
mod concurrency_postgres;
mod connect_postgres;
mod connect_redis;
mod consumer_sources;
mod dependencies_recovery;
mod driver_memory;
mod driver_postgres;
mod driver_redis;
mod driver_redis_cluster;
mod driver_sqlite;
mod durability_redis;
mod export_postgres;
mod groups_across_queues;
mod hot_path_postgres;
mod known_claim_postgres;
mod layout_redis;
mod lease_sweep;
mod operator_sqlite;
mod outbox_memory;
mod outbox_postgres;
mod outbox_sqlite;
mod outbox_targets;
mod partitions_postgres;
mod purge_postgres;
mod purge_redis;
mod redis_harness;
mod scheduler_postgres;
mod stores_sqlite;
mod transactions_postgres;
mod transactions_sqlite;
