//! The HTTP client a sender sends with: no redirects, no proxy, the options' timeout, and a
//! resolver whose answers are filtered for private addresses. Apart from the sender because
//! this is where the network policy is set, once per client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use crate::error::{ErrorCode, JobError};

use super::safety::{FilteringResolver, HostResolver, SystemResolver};
use super::types::WebhookOptions;

/// The client every sender of this process with the same timeout and address policy shares,
/// on the system resolver, keeping no idle connection
/// ([`WebhookSenderBuilder::build_shared`](super::WebhookSenderBuilder::build_shared) says why).
pub(super) fn shared_client(options: &WebhookOptions) -> Result<reqwest::Client, JobError> {
    type Clients = Mutex<HashMap<(Duration, bool), reqwest::Client>>;
    static CLIENTS: OnceLock<Clients> = OnceLock::new();
    let key = (options.timeout, options.allow_private);
    let mut clients = CLIENTS
        .get_or_init(Clients::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    Ok(match clients.get(&key) {
        Some(client) => client.clone(),
        None => {
            let client = http_client(options, Arc::new(SystemResolver), 0)?;
            clients.insert(key, client.clone());
            client
        }
    })
}

/// The `User-Agent` of every delivery: the library and its version (`jobs/0.1.0`), so a
/// receiver can tell the sender (some endpoints refuse a request without one).
pub const USER_AGENT: &str = concat!("jobs/", env!("CARGO_PKG_VERSION"));

/// The HTTP client a sender sends with: no redirects, the options' timeout, no proxy,
/// `resolver`'s answers filtered for private addresses, at most `idle` idle connections kept
/// per host, and [`USER_AGENT`] on every request.
pub(super) fn http_client(
    options: &WebhookOptions,
    resolver: Arc<dyn HostResolver>,
    idle: usize,
) -> Result<reqwest::Client, JobError> {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .pool_max_idle_per_host(idle)
        // A redirect is answered, never followed: the receiver must be the URL configured.
        .redirect(reqwest::redirect::Policy::none())
        .timeout(options.timeout)
        // A proxy would resolve the host itself, past the address filter.
        .no_proxy()
        .dns_resolver(Arc::new(FilteringResolver {
            inner: resolver,
            allow_private: options.allow_private,
        }))
        .use_rustls_tls()
        .build()
        .map_err(|e| {
            JobError::new(
                ErrorCode::Invariant,
                "the webhook HTTP client could not be built",
            )
            .with_cause(e.without_url())
        })
}
