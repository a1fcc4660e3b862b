//! What people and other systems touch: the `jobs` command-line tool, the dashboard (over HTTP
//! and in headless Chromium), and webhooks out and in.

#[path = "../support/mod.rs"]
mod support;

mod cli_factories_postgres;
mod cli_outbox;
mod cli_postgres;
mod cli_redis;
mod cli_sqlite;
mod cli_verbs;
mod dashboard;
mod dashboard_browser;
mod dashboard_outbox;
mod webhooks;
mod webhooks_declared;
mod webhooks_inbound;
