//! The one emitter of a job's `JobDescriptor`, for every attribute that declares a job
//! (`#[job]`, `#[backfill]`, `#[ledger]`) and for a refused declaration's stand-in.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::model::{Concurrency, RateDecl, Retry};
use crate::value::dependency_failure::DependencyFailure;
use crate::value::duration::DurationValue;
use crate::value::scope::Scope;

/// What a job declares. `None` (and `false`) leaves the runtime's default.
pub struct JobShape<'a> {
    /// The durable name.
    pub name: &'a str,
    /// The `TenantMode` expression.
    pub tenant_mode: TokenStream,
    /// The input type.
    pub input_ty: TokenStream,
    /// The input type as the manifest shows it.
    pub input_name: &'a str,
    /// `queue = ..`.
    pub queue: Option<&'a str>,
    /// `retry(..)`.
    pub retry: Option<&'a Retry>,
    /// `dead_letter = ..`.
    pub dead_letter: Option<bool>,
    /// `timeout = ..`.
    pub timeout: Option<&'a DurationValue>,
    /// `step_timeout = ..`.
    pub step_timeout: Option<&'a DurationValue>,
    /// `event_poll = ..`.
    pub event_poll: Option<&'a DurationValue>,
    /// `expires_in = ..`.
    pub expires_in: Option<&'a DurationValue>,
    /// `debounce = ..`.
    pub debounce: Option<&'a DurationValue>,
    /// `unique(for = ..)`.
    pub unique_for: Option<&'a DurationValue>,
    /// `concurrency ..`.
    pub concurrency: Option<&'a Concurrency>,
    /// `rate(..)`.
    pub rate: Option<&'a RateDecl>,
    /// Whether an `on_settled` hook is declared.
    pub on_settled: bool,
    /// `priority = ..`, checked to lie in the runtime's range.
    pub priority: Option<i64>,
    /// `on_dependency_failure = ..`.
    pub on_dependency_failure: Option<DependencyFailure>,
    /// `keep_result`: the `KeptResult` expression of the output type.
    pub result: Option<TokenStream>,
}

impl<'a> JobShape<'a> {
    /// A job with the runtime's defaults for every option.
    pub fn new(
        name: &'a str,
        tenant_mode: TokenStream,
        input_ty: TokenStream,
        input_name: &'a str,
    ) -> Self {
        JobShape {
            name,
            tenant_mode,
            input_ty,
            input_name,
            queue: None,
            retry: None,
            dead_letter: None,
            timeout: None,
            step_timeout: None,
            event_poll: None,
            expires_in: None,
            debounce: None,
            unique_for: None,
            concurrency: None,
            rate: None,
            on_settled: false,
            priority: None,
            on_dependency_failure: None,
            result: None,
        }
    }
}

/// The `TenantMode` of a factory's job: the runtime's input carries the tenant, or there is
/// none.
pub fn scope_tenant_mode(p: &TokenStream, scope: Scope) -> TokenStream {
    match scope {
        Scope::None => quote!(#p::TenantMode::None),
        Scope::PerTenant => quote!(#p::TenantMode::Field("tenant")),
    }
}

/// `let mut d = JobDescriptor::new(..); d.queue = ..; ..; d`: the runtime's defaults, then
/// every declared option. `p` is the `__private` path.
pub fn job_descriptor(p: &TokenStream, shape: JobShape<'_>) -> TokenStream {
    let JobShape {
        name,
        tenant_mode,
        input_ty,
        input_name,
        queue,
        retry,
        dead_letter,
        timeout,
        step_timeout,
        event_poll,
        expires_in,
        debounce,
        unique_for,
        concurrency,
        rate,
        on_settled,
        priority,
        on_dependency_failure,
        result,
    } = shape;
    let mut set = Vec::new();
    if let Some(queue) = queue {
        set.push(quote!(d.queue = #queue;));
    }
    if let Some(retry) = retry {
        if let Some(attempts) = retry.attempts {
            set.push(quote!(d.retry.attempts = #attempts;));
        }
        if let Some(backoff) = retry.backoff {
            let variant = format_ident!("{}", backoff.variant());
            set.push(quote!(d.retry.backoff = #p::Backoff::#variant;));
        }
        if let Some(delay) = &retry.delay {
            let delay = millis(delay);
            set.push(quote!(d.retry.delay = #delay;));
        }
        if let Some(max_delay) = &retry.max_delay {
            let max_delay = millis(max_delay);
            set.push(quote!(d.retry.max_delay = #max_delay;));
        }
        if let Some(jitter) = retry.jitter {
            let variant = format_ident!("{}", jitter.variant());
            set.push(quote!(d.retry.jitter = #p::Jitter::#variant;));
        }
    }
    if let Some(dead_letter) = dead_letter {
        set.push(quote!(d.dead_letter = #dead_letter;));
    }
    if let Some(timeout) = timeout {
        let timeout = millis(timeout);
        set.push(quote!(d.timeout = ::std::option::Option::Some(#timeout);));
    }
    if let Some(step_timeout) = step_timeout {
        let step_timeout = millis(step_timeout);
        set.push(quote!(d.step_timeout = ::std::option::Option::Some(#step_timeout);));
    }
    if let Some(event_poll) = event_poll {
        let event_poll = millis(event_poll);
        set.push(quote!(d.event_poll = #event_poll;));
    }
    if let Some(expires_in) = expires_in {
        let expires_in = millis(expires_in);
        set.push(quote!(d.expires_in = ::std::option::Option::Some(#expires_in);));
    }
    if let Some(debounce) = debounce {
        let debounce = millis(debounce);
        set.push(quote!(d.debounce = ::std::option::Option::Some(#debounce);));
    }
    if let Some(unique_for) = unique_for {
        let unique_for = millis(unique_for);
        set.push(quote!(d.unique_for = ::std::option::Option::Some(#unique_for);));
    }
    if let Some(concurrency) = concurrency {
        let (limit, keyed, when_busy) = match concurrency {
            Concurrency::Plain { limit } => (*limit, false, "Wait"),
            Concurrency::Keyed {
                limit, when_busy, ..
            } => (*limit, true, when_busy.variant()),
        };
        let when_busy = format_ident!("{}", when_busy);
        set.push(quote! {
            d.concurrency = ::std::option::Option::Some(#p::Concurrency {
                limit: #limit,
                keyed: #keyed,
                when_busy: #p::WhenBusy::#when_busy,
            });
        });
    }
    if let Some(rate) = rate {
        let limit = rate.limit;
        let per = millis(&rate.per);
        let keyed = rate.key.is_some();
        set.push(quote! {
            d.rate = ::std::option::Option::Some(#p::RateLimit {
                limit: #limit,
                per: #per,
                keyed: #keyed,
            });
        });
    }
    if let Some(priority) = priority.and_then(|p| i16::try_from(p).ok()) {
        set.push(quote!(d.priority = #priority;));
    }
    if on_settled {
        set.push(quote!(d.on_settled = true;));
    }
    if let Some(policy) = on_dependency_failure {
        let variant = format_ident!("{}", policy.variant());
        set.push(quote!(d.on_dependency_failure = #p::DependencyFailure::#variant;));
    }
    if let Some(result) = result {
        set.push(quote!(d.result = ::std::option::Option::Some(#result);));
    }
    let binding = if set.is_empty() {
        quote!(d)
    } else {
        quote!(mut d)
    };
    quote! {{
        let #binding = #p::JobDescriptor::new(
            #name,
            #tenant_mode,
            #input_name,
            #p::input_schema::<#input_ty>,
        );
        #(#set)*
        d
    }}
}

fn millis(duration: &DurationValue) -> TokenStream {
    let millis = duration.millis;
    quote!(::std::time::Duration::from_millis(#millis))
}
