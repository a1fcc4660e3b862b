//! `#[webhook]`: its part of the pipeline (`super::pipeline`), and what it emits: the lookup fn
//! unchanged, its handle type, the `Job` impl whose body reads the endpoint and the event
//! through the lookup on every attempt and delivers them once, the typed enqueue methods and
//! the registry entry.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::ItemFn;

use super::descriptor::{job_descriptor, scope_tenant_mode, JobShape};
use super::pipeline::impl_macro;
use crate::args::webhook::WebhookArgs;
use crate::check;
use crate::model::WebhookDecl;
use crate::value::scope::Scope;

/// `#[webhook]`, for the expansion pipeline.
pub struct Webhook;

impl_macro! {
    impl Macro for Webhook {
        name: "webhook",
        wrong_item: "`#[webhook]` goes on the fn that reads one delivery's \
            endpoint and event: `async fn lookup(run: &Run, delivery: &WebhookDelivery) -> \
            Result<WebhookTarget, JobError>` (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: WebhookArgs,
        decl: WebhookDecl,
        refused: crate::args::webhook::webhook_refused,
        check: check::webhook,
        emit: quote_webhook,
        stand_in: stand_in,
        rename: [handle, crate_path],
    }
}

/// What a refused `#[webhook]` leaves for its call sites: the handle, its `Job` impl and the
/// enqueue methods of either tenant scope, whose bodies never run. Nothing when the handle's
/// name clashes with the fn.
fn stand_in(decl: &WebhookDecl<'_>) -> TokenStream {
    let handle = &decl.handle;
    if *handle == decl.item.sig.ident {
        return TokenStream::new();
    }
    let vis = &decl.item.vis;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let name = decl.name.as_deref().unwrap_or("");
    let stand_in_job = super::fallback::stand_in_job(
        &p,
        handle,
        name,
        &quote!(#p::WebhookDelivery),
        "WebhookDelivery",
        &quote!(#p::WebhookDelivered),
    );
    quote! {
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        #[allow(dead_code, unused_variables, clippy::all)]
        const _: () = {
            #stand_in_job

            impl #handle {
                #vis async fn enqueue(
                    _jobs: &#p::Jobs,
                    _delivery: #p::WebhookDelivery,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis async fn enqueue_for(
                    _jobs: &#p::Jobs,
                    _tenant: impl ::std::convert::Into<::std::string::String>,
                    _delivery: #p::WebhookDelivery,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis fn descriptor() -> #p::JobDescriptor {
                    ::std::unreachable!()
                }
                #vis fn options() -> #p::WebhookOptions {
                    ::std::unreachable!()
                }
            }
        };
    }
}

fn millis(value: Option<&crate::value::duration::DurationValue>) -> Option<u64> {
    value.map(|d| d.millis)
}

fn quote_webhook(decl: &WebhookDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let (Some(name), Some(scope)) = (&decl.name, decl.tenant) else {
        unreachable!("checked by check::webhook");
    };
    let input_ty = quote!(#p::WebhookDelivery);
    let mut shape = JobShape::new(
        name,
        scope_tenant_mode(&p, scope),
        input_ty.clone(),
        "WebhookDelivery",
    );
    shape.queue = decl.queue.as_deref();
    shape.retry = Some(&decl.retry);
    let job_descriptor = job_descriptor(&p, shape);

    let mut set = Vec::new();
    if let Some(n) = decl.disable_after {
        set.push(quote!(o.disable_after = #n;));
    }
    if let Some(ms) = millis(decl.timeout.as_ref()) {
        set.push(quote!(o.timeout = #p::Duration::from_millis(#ms);));
    }
    if let Some(ms) = millis(decl.max_delay.as_ref()) {
        set.push(quote!(o.max_delay = #p::Duration::from_millis(#ms);));
    }
    if decl.allow_private {
        set.push(quote!(o.allow_private = true;));
    }
    if decl.development {
        set.push(quote!(o.development = true;));
    }
    let binding = if set.is_empty() {
        quote!(o)
    } else {
        quote!(mut o)
    };
    // A lookup whose parameters or answer are not the runtime's is reported at the fn.
    let lookup = quote_spanned! {item.sig.span()=>
        #fn_ident(&__run, &__input)
    };
    let enqueue = match scope {
        Scope::None => {
            let doc = format!(
                "Enqueues one delivery of the `{name}` webhook: the event to the endpoint. A \
                 live delivery of the same event to the same endpoint answers `deduped`."
            );
            quote! {
                #[doc = #doc]
                #vis async fn enqueue(
                    jobs: &#p::Jobs,
                    delivery: #p::WebhookDelivery,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(delivery).await
                }
            }
        }
        Scope::PerTenant => {
            let doc = format!(
                "Enqueues one delivery of the `{name}` webhook for `tenant`: the event to the \
                 endpoint. A live delivery of the same event to the same endpoint for the \
                 tenant answers `deduped`."
            );
            quote! {
                #[doc = #doc]
                #vis async fn enqueue_for(
                    jobs: &#p::Jobs,
                    tenant: impl ::std::convert::Into<::std::string::String>,
                    delivery: #p::WebhookDelivery,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(delivery.for_tenant(tenant)).await
                }
            }
        }
    };
    let summary = format!(
        " Handle of the `{name}` webhook (endpoint and event read per attempt by `{fn_ident}`), \
         declared with `#[webhook]`."
    );

    quote! {
        #item

        #[doc = #summary]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        const _: () = {
            impl #p::Job for #handle {
                type Input = #input_ty;
                type Output = #p::WebhookDelivered;

                const DESCRIPTOR: #p::JobDescriptor = #job_descriptor;

                fn idempotency_key(input: &#input_ty) -> ::std::string::String {
                    #p::webhook_key(input)
                }

                fn tenant(input: &#input_ty) -> ::std::option::Option<::std::string::String> {
                    ::std::clone::Clone::clone(&input.tenant)
                }

                fn run(
                    __run: #p::Run,
                    __input: #input_ty,
                ) -> #p::BoxFuture<'static, ::std::result::Result<Self::Output, #p::JobError>> {
                    ::std::boxed::Box::pin(async move {
                        let __target = #lookup.await?;
                        #p::run_webhook(&__run, #handle::options(), __target).await
                    })
                }
            }

            #[allow(dead_code)]
            impl #handle {
                #enqueue

                /// The job's declaration, as the manifest shows it.
                #vis const fn descriptor() -> #p::JobDescriptor {
                    <Self as #p::Job>::DESCRIPTOR
                }

                /// The sender's settings this declaration states (the defaults elsewhere).
                #vis const fn options() -> #p::WebhookOptions {
                    let #binding = #p::WebhookOptions::DEFAULT;
                    #(#set)*
                    o
                }
            }

            #p::inventory::submit! {
                #p::JobEntry::of::<#handle>()
            }
        };
    }
}
