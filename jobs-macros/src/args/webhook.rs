//! `#[webhook(..)]` as written.

use super::common::ArgNames;
use darling::FromMeta;

use super::common::Delivery;
use crate::value::count::Count;
use crate::value::duration::DurationValue;
use crate::value::scope::Scope;
use crate::value::text::{Flag, TypeName};
use crate::value::Arg;

/// The arguments of `#[webhook(..)]`. Every one is optional here: which are required is
/// decided by `crate::check`.
#[derive(Debug, Default, FromMeta)]
pub struct WebhookArgs {
    /// `tenant = none | per_tenant`
    pub tenant: Option<Arg<Scope>>,
    /// `disable_after = 10`: consecutive failed attempts that disable the endpoint.
    pub disable_after: Option<Arg<Count>>,
    /// `timeout = "10s"`: one request's timeout, below the worker's drain budget.
    pub timeout: Option<Arg<DurationValue>>,
    /// `max_delay = "1h"`: the longest `Retry-After` honoured.
    pub max_delay: Option<Arg<DurationValue>>,
    /// `allow_private = true`: lets hosts resolve to loopback, private or metadata addresses.
    pub allow_private: Option<Arg<Flag>>,
    /// `development = true`: lets `http://` URLs through.
    pub development: Option<Arg<Flag>>,
    /// `handle = OrderWebhook`
    pub handle: Option<Arg<TypeName>>,
    /// `queue`, `retry(..)`, `name`, `crate`.
    #[darling(flatten)]
    pub delivery: Delivery,
}

impl ArgNames for WebhookArgs {
    const NAMES: &'static [&'static str] = &[
        "name",
        "tenant",
        "queue",
        "retry",
        "timeout",
        "max_delay",
        "disable_after",
        "allow_private",
        "development",
        "handle",
        "crate",
    ];
}

/// Why `#[webhook]` refuses the argument `arg`, if it does.
pub fn webhook_refused(arg: &str) -> Option<String> {
    let reason = match arg {
        "key" => {
            "a webhook delivery's idempotency key is its endpoint and event ids: one event is \
             delivered once to one endpoint (X_JOB_DECLARATION_INVALID)"
        }
        "step_timeout" => {
            "a webhook delivery has no steps: its one request is bounded by `timeout` \
             (X_JOB_DECLARATION_INVALID)"
        }
        "endpoint" | "secret" | "url" => {
            "a webhook's endpoint (URL and secret) is read per attempt by the fn under \
             `#[webhook]`, never written in a declaration or stored (X_JOB_DECLARATION_INVALID)"
        }
        _ => return None,
    };
    Some(reason.to_owned())
}
