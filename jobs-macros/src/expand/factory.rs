//! What the factories over `#[job]` share: the job descriptor of a declaration whose input is
//! the runtime's own type.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::model::Retry;
use crate::value::duration::DurationValue;
use crate::value::scope::Scope;

/// What a factory's job declares: its name and tenant decision, the runtime's input type, and
/// the `#[job]` options it accepts.
pub struct JobShape<'a> {
    /// The durable name.
    pub name: &'a str,
    /// The tenant decision.
    pub scope: Scope,
    /// The input type's path.
    pub input_ty: &'a TokenStream,
    /// The input type as the manifest shows it.
    pub input_name: &'a str,
    /// `queue = ..`.
    pub queue: Option<&'a str>,
    /// `retry(..)`.
    pub retry: &'a Retry,
    /// `timeout = ..`.
    pub timeout: Option<&'a DurationValue>,
}

/// `let mut d = JobDescriptor::new(..); d.queue = ..; d.retry.. ; d`.
pub fn job_descriptor(p: &TokenStream, shape: JobShape<'_>) -> TokenStream {
    let JobShape {
        name,
        scope,
        input_ty,
        input_name,
        queue,
        retry,
        timeout,
    } = shape;
    let tenant_mode = match scope {
        Scope::None => quote!(#p::TenantMode::None),
        Scope::PerTenant => quote!(#p::TenantMode::Field("tenant")),
    };
    let mut set = Vec::new();
    if let Some(queue) = queue {
        set.push(quote!(d.queue = #queue;));
    }
    if let Some(attempts) = retry.attempts {
        set.push(quote!(d.retry.attempts = #attempts;));
    }
    if let Some(backoff) = retry.backoff {
        let variant = format_ident!("{}", backoff.variant());
        set.push(quote!(d.retry.backoff = #p::Backoff::#variant;));
    }
    if let Some(delay) = &retry.delay {
        let delay = delay.millis;
        set.push(quote!(d.retry.delay = ::std::time::Duration::from_millis(#delay);));
    }
    if let Some(max_delay) = &retry.max_delay {
        let max_delay = max_delay.millis;
        set.push(quote!(d.retry.max_delay = ::std::time::Duration::from_millis(#max_delay);));
    }
    if let Some(jitter) = retry.jitter {
        let variant = format_ident!("{}", jitter.variant());
        set.push(quote!(d.retry.jitter = #p::Jitter::#variant;));
    }
    if let Some(timeout) = timeout {
        let timeout = timeout.millis;
        set.push(quote!(
            d.timeout = ::std::option::Option::Some(::std::time::Duration::from_millis(#timeout));
        ));
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

/// A stable 64-bit FNV-1a hash, as 16 hex digits: the declaration's checksum.
pub fn checksum(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}
