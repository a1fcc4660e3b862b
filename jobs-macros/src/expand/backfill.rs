//! `#[backfill]`: its part of the pipeline (`super::pipeline`), and what it emits: the handler
//! unchanged, its handle type, the `Job` and `Backfill` impls, the typed enqueue methods and
//! the registry entries.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

use super::descriptor::{job_descriptor, scope_tenant_mode, JobShape};
use super::job::type_text;
use super::pipeline::impl_macro;
use crate::args::backfill::BackfillArgs;
use crate::check;
use crate::model::BackfillDecl;
use crate::value::scope::Scope;

/// `#[backfill]`, for the expansion pipeline.
pub struct Backfill;

impl_macro! {
    impl Macro for Backfill {
        name: "backfill",
        wrong_item: "`#[backfill]` goes on the per-page handler: `async fn \
            fill(pass: Pass, rows: Vec<Row>) -> Result<(), JobError>` (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: BackfillArgs,
        decl: BackfillDecl,
        refused: crate::args::backfill::backfill_refused,
        check: check::backfill,
        emit: quote_backfill,
        stand_in: stand_in,
        rename: [handle, crate_path],
    }
}

/// What a refused `#[backfill]` leaves for its call sites: the handle, its `Job` impl and
/// every enqueue method of either tenant scope, whose bodies never run. Nothing when the
/// handle's name clashes with the fn.
fn stand_in(decl: &BackfillDecl<'_>) -> TokenStream {
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
        &quote!(#p::BackfillRequest),
        "BackfillRequest",
        &quote!(#p::BackfillReport),
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
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis async fn force(
                    _jobs: &#p::Jobs,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis async fn enqueue_for(
                    _jobs: &#p::Jobs,
                    _tenant: impl ::std::convert::Into<::std::string::String>,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis async fn force_for(
                    _jobs: &#p::Jobs,
                    _tenant: impl ::std::convert::Into<::std::string::String>,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis fn descriptor() -> #p::JobDescriptor {
                    ::std::unreachable!()
                }
                #vis fn backfill() -> #p::BackfillDescriptor {
                    ::std::unreachable!()
                }
            }
        };
    }
}

fn quote_backfill(decl: &BackfillDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let (Some(name), Some(scope), Some(source), Some(row_ty)) =
        (&decl.name, decl.tenant, &decl.source, decl.row_ty())
    else {
        unreachable!("checked by check::backfill");
    };
    let input_ty = quote!(#p::BackfillRequest);
    let mut shape = JobShape::new(
        name,
        scope_tenant_mode(&p, scope),
        input_ty.clone(),
        "BackfillRequest",
    );
    shape.queue = decl.queue.as_deref();
    shape.retry = Some(&decl.retry);
    shape.timeout = decl.timeout.as_ref();
    let job_descriptor = job_descriptor(&p, shape);
    let source_text = source.to_token_stream().to_string().replace(' ', "");
    let row_text = type_text(row_ty);
    // Neither `batch` nor `rate` is part of the checksum: retuning the pace is not a new pass.
    let sum = checksum(&format!(
        "{name}\n{source_text}\n{}",
        item.to_token_stream()
    ));
    let variant = syn::Ident::new(scope.variant(), Span::call_site());
    let mut set = Vec::new();
    if let Some(batch) = decl.batch {
        set.push(quote!(d.batch = #batch;));
    }
    if let Some(rate) = decl.rate {
        set.push(quote!(d.rate = #rate;));
    }
    if let Some(requires) = &decl.requires {
        set.push(quote!(d.requires = ::std::option::Option::Some(#requires);));
    }
    if !decl.environments.is_empty() {
        let envs = &decl.environments;
        set.push(quote!(d.environments = &[#(#envs),*];));
    }
    if decl.count.is_some() {
        set.push(quote!(d.counts = true;));
    }
    // A count fn of the wrong shape is reported at the count.
    let count = decl.count.as_ref().map(|count| {
        quote_spanned! {count.span()=>
            fn count(
                __pass: #p::Pass,
            ) -> ::std::option::Option<
                #p::BoxFuture<'static, ::std::result::Result<i64, #p::JobError>>,
            > {
                ::std::option::Option::Some(::std::boxed::Box::pin(#p::join_count(__pass, #count)))
            }
        }
    });
    let binding = if set.is_empty() {
        quote!(d)
    } else {
        quote!(mut d)
    };
    // A handler whose rows are not the source's is reported at the source.
    let page = quote_spanned! {source.span()=>
        #p::join_page(__pass, __after, __limit, #source, #fn_ident)
    };
    let enqueue = match scope {
        Scope::None => {
            let doc = format!(
                "Enqueues a pass of the `{name}` backfill over every tenant. A live pass under \
                 the name answers `deduped`; after a completed pass the run reports `skipped`."
            );
            let force_doc = format!(
                "Enqueues a pass of the `{name}` backfill even though one completed (a new \
                 ledger row)."
            );
            quote! {
                #[doc = #doc]
                #vis async fn enqueue(
                    jobs: &#p::Jobs,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(#p::BackfillRequest::new()).await
                }

                #[doc = #force_doc]
                #vis async fn force(
                    jobs: &#p::Jobs,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(#p::BackfillRequest::new().forced()).await
                }
            }
        }
        Scope::PerTenant => {
            let doc = format!(
                "Enqueues a pass of the `{name}` backfill scoped to `tenant`. A live pass for \
                 the tenant answers `deduped`; after a completed one the run reports `skipped`."
            );
            let force_doc = format!(
                "Enqueues a pass of the `{name}` backfill for `tenant` even though one \
                 completed (a new ledger row)."
            );
            quote! {
                #[doc = #doc]
                #vis async fn enqueue_for(
                    jobs: &#p::Jobs,
                    tenant: impl ::std::convert::Into<::std::string::String>,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(#p::BackfillRequest::tenant(tenant)).await
                }

                #[doc = #force_doc]
                #vis async fn force_for(
                    jobs: &#p::Jobs,
                    tenant: impl ::std::convert::Into<::std::string::String>,
                ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                    jobs.enqueue::<Self>(#p::BackfillRequest::tenant(tenant).forced()).await
                }
            }
        }
    };
    let summary = format!(
        " Handle of the `{name}` backfill (source `{source_text}`, handler `{fn_ident}`), \
         declared with `#[backfill]`."
    );

    quote! {
        #item

        #[doc = #summary]
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        const _: () = {
            impl #p::Job for #handle {
                type Input = #input_ty;
                type Output = #p::BackfillReport;

                const DESCRIPTOR: #p::JobDescriptor = #job_descriptor;

                fn idempotency_key(_input: &#input_ty) -> ::std::string::String {
                    ::std::string::String::from(#name)
                }

                fn tenant(input: &#input_ty) -> ::std::option::Option<::std::string::String> {
                    ::std::clone::Clone::clone(&input.tenant)
                }

                fn run(
                    __run: #p::Run,
                    __input: #input_ty,
                ) -> #p::BoxFuture<'static, ::std::result::Result<Self::Output, #p::JobError>> {
                    ::std::boxed::Box::pin(#p::run_backfill::<Self>(__run, __input))
                }
            }

            impl #p::Backfill for #handle {
                const BACKFILL: #p::BackfillDescriptor = {
                    let #binding = #p::BackfillDescriptor::new(
                        #name,
                        #p::BackfillTenant::#variant,
                        #source_text,
                        #row_text,
                        #sum,
                    );
                    #(#set)*
                    d
                };

                fn page(
                    __pass: #p::Pass,
                    __after: ::std::option::Option<#p::serde_json::Value>,
                    __limit: u32,
                ) -> #p::BoxFuture<'static, ::std::result::Result<#p::PageDone, #p::JobError>> {
                    ::std::boxed::Box::pin(#page)
                }

                #count
            }

            #[allow(dead_code)]
            impl #handle {
                #enqueue

                /// The job's declaration, as the manifest shows it.
                #vis const fn descriptor() -> #p::JobDescriptor {
                    <Self as #p::Job>::DESCRIPTOR
                }

                /// The backfill's declaration: batch, rate, source, checksum.
                #vis const fn backfill() -> #p::BackfillDescriptor {
                    <Self as #p::Backfill>::BACKFILL
                }
            }

            #p::inventory::submit! {
                #p::JobEntry::of::<#handle>()
            }

            #p::inventory::submit! {
                #p::BackfillEntry::of::<#handle>()
            }
        };
    }
}

/// A stable 64-bit FNV-1a hash, as 16 hex digits: the declaration's checksum.
fn checksum(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> Result<String, String> {
        super::super::pipeline::run::<Backfill>(args.parse().unwrap(), item.parse().unwrap())
            .map(|tokens| tokens.to_string())
            .map_err(|refused| {
                refused
                    .errors
                    .into_iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            })
    }

    const HANDLER: &str =
        "async fn fill(pass: Pass, rows: Vec<User>) -> Result<(), JobError> { Ok(()) }";

    #[test]
    fn the_defaults() {
        let out = expand_str(
            r#"name = "users.fill", tenant = none, source = users"#,
            HANDLER,
        )
        .unwrap();
        for expected in [
            "struct Fill ;",
            "impl :: jobs :: __private :: Backfill for Fill",
            "BackfillTenant :: None",
            "join_page (__pass , __after , __limit , users , fill)",
            "async fn enqueue (jobs",
            "BackfillEntry :: of :: < Fill > ()",
            "\"fnv1a64:",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
        assert!(!out.contains("enqueue_for"), "{out}");
    }

    #[test]
    fn batch_and_rate_are_not_in_the_checksum() {
        let a = expand_str(
            r#"name = "n", tenant = per_tenant, source = s, batch = 10, rate = 2.5"#,
            HANDLER,
        )
        .unwrap();
        let b = expand_str(r#"name = "n", tenant = per_tenant, source = s"#, HANDLER).unwrap();
        let sum = |out: &str| out.split("\"fnv1a64:").nth(1).unwrap()[..16].to_string();
        assert_eq!(sum(&a), sum(&b));
        assert!(
            a.contains("d . batch = 10u32") && a.contains("d . rate = 2.5f64"),
            "{a}"
        );
        assert!(a.contains("enqueue_for"), "{a}");
    }

    #[test]
    fn many_errors_in_one_declaration() {
        let err = expand_str(
            r#"batch = 0, rate = -1.0, key = "k""#,
            "fn fill(run: Run, rows: User) {}",
        )
        .unwrap_err();
        for expected in [
            "`batch` must be at least 1",
            "`rate` must be above 0",
            "idempotency key is its `name`",
            "needs `name = \"..\"`",
            "needs a tenant decision",
            "needs `source = <fn>`",
            "must be `async`",
            "gets no step API",
            "as `Vec<Row>`",
            "returns `Result<(), JobError>`",
        ] {
            assert!(err.contains(expected), "missing `{expected}` in\n{err}");
        }
    }
}
