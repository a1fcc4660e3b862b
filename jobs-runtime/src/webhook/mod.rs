//! Webhooks out and in (feature `webhooks`).
//!
//! Out: a [`WebhookSender`] delivers ONE event to ONE endpoint per call, signed
//! (`t=<seconds>,v1=<hex hmac-sha256>` over `v1:<t>:<event id>:<topic>:<body>`), to an https
//! URL whose resolved addresses are public (unless `allow_private`), redirects never
//! followed, `Retry-After` honoured, every attempt recorded in a [`WebhookLedger`] which
//! disables an endpoint after `disable_after` consecutive failures.
//!
//! Declared: `#[webhook(name = .., tenant = ..)]` on an `async fn(run: &Run, delivery:
//! &WebhookDelivery) -> Result<WebhookTarget, JobError>` makes a delivery job whose every
//! attempt reads the endpoint and the event through that fn and records itself in the store's
//! own ledger ([`crate::driver::JobDriver::webhook_ledger`]: memory, Postgres, SQLite).
//!
//! In: [`verify_webhook_signature`] and an axum handler ([`inbound`]) that verifies, bounds
//! the body and enqueues the delivery as a job deduped by its delivery id.

mod client;
mod declared;
pub mod inbound;
mod outcome;
mod safety;
mod sender;
mod signature;
mod types;

pub use crate::driver::webhook_ledger::{
    AttemptsPurgeParams, EndpointStanding, WebhookAttempt, WebhookLedger,
};
pub use crate::driver::{MemoryWebhookLedger, MEMORY_LEDGER_RING};
/// The axum the inbound router ([`inbound::WebhookReceiver::router`]) is built with, so an app
/// serves or merges it without naming a second axum version.
pub use axum;
pub use client::USER_AGENT;
pub use declared::{run_webhook, webhook_key, WebhookTarget};
pub use safety::{
    check_endpoint_url, is_private_address, redact_url, HostResolver, SystemResolver,
};
pub use sender::{WebhookSender, WebhookSenderBuilder};
pub use signature::{
    check_event_field, sign, signature_header, verify_webhook_signature, VerifiedWebhook,
    VerifyOptions, DEFAULT_TOLERANCE, ID_HEADER, MAX_EVENT_FIELD_CHARS, SIGNATURE_HEADER,
    TOPIC_HEADER,
};
pub use types::{
    WebhookDelivered, WebhookDelivery, WebhookDirectory, WebhookEndpoint, WebhookEvent,
    WebhookOptions, DEFAULT_WEBHOOK_DISABLE_AFTER, DEFAULT_WEBHOOK_MAX_DELAY,
    DEFAULT_WEBHOOK_TIMEOUT,
};
