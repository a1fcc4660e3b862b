//! `#[task]`: its part of the pipeline (`super::pipeline`), and what it emits: the fn
//! unchanged, its handle type, the `Task` impl and the registry entry.
//!
//! Generated code names the runtime only through `<crate>::__private` (default `::jobs`), and
//! std only through absolute `::std` paths, so nothing depends on what the user imported.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{ItemFn, Type};

use super::pipeline::impl_macro;
use crate::args::task::TaskArgs;
use crate::check;
use crate::model::TaskDecl;

/// `#[task]`, for the expansion pipeline.
pub struct Task;

impl_macro! {
    impl Macro for Task {
        name: "task",
        wrong_item: "`#[task]` goes on a fn taking the occurrence and \
            returning the jobs to enqueue: `fn weekday_digest(at: Occurrence) -> Vec<Entry>` \
            (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: TaskArgs,
        decl: TaskDecl,
        refused: crate::args::task::refused,
        check: check::task,
        emit: quote_task,
        stand_in: stand_in,
        rename: [handle, crate_path],

        /// An entry naming its job by string is refused; re-emitted as written it would add
        /// rustc's arity error, whose suggestion (drop the input) is wrong.
        fn refused_item(decl: &TaskDecl<'_>, item: TokenStream) -> TokenStream {
            let krate = &decl.crate_path;
            check::entries::without_entries_by_name(item, &quote!(#krate::__private::refused))
        }
    }
}

/// What a refused `#[task]` leaves for its call sites: the handle, its `Task` impl and its
/// methods, whose bodies never run. Nothing when the handle's name clashes with the fn or with
/// a name the fn uses (a type of the user's: a second item of that name would be rustc's error
/// on top of ours).
fn stand_in(decl: &TaskDecl<'_>) -> TokenStream {
    let handle = &decl.handle;
    if *handle == decl.item.sig.ident || check::handle::first_use(decl.item, handle).is_some() {
        return TokenStream::new();
    }
    let vis = &decl.item.vis;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let name = &decl.name;
    quote! {
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        #[allow(dead_code, unused_variables, clippy::all)]
        const _: () = {
            impl #p::Task for #handle {
                const DESCRIPTOR: #p::TaskDescriptor = #p::TaskDescriptor::new(#name, "", "");
                fn entries(_: &#p::Occurrence) -> ::std::vec::Vec<#p::Entry> {
                    ::std::unreachable!()
                }
            }

            impl #handle {
                #vis async fn enqueue(
                    _jobs: &#p::Jobs,
                ) -> ::std::result::Result<::std::vec::Vec<#p::Enqueued>, #p::JobError> {
                    ::std::unreachable!()
                }
                #vis fn next_run(
                    _from: #p::Timestamp,
                ) -> ::std::option::Option<#p::Timestamp> {
                    ::std::unreachable!()
                }
                #vis fn descriptor() -> #p::TaskDescriptor {
                    ::std::unreachable!()
                }
            }
        };
    }
}

/// The expansion of a checked declaration.
fn quote_task(decl: &TaskDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    // All present once `check::task` passed.
    let (Some(occurrence_ty), Some(output_ty)) = (decl.occurrence_ty(), decl.output_ty()) else {
        unreachable!("checked by check::task::fn_takes_the_occurrence and fn_returns_entries");
    };

    let docs = handle_docs(decl);
    let descriptor = descriptor(decl, &p);
    // The fn takes the occurrence by value (it is `Copy`) or by reference; a parameter of
    // another type is reported at that type.
    let occurrence = match occurrence_ty {
        Type::Reference(_) => quote_spanned!(occurrence_ty.span()=> __occurrence),
        _ => quote_spanned!(occurrence_ty.span()=> *__occurrence),
    };
    // Spanned at the return type, so answering anything but entries (job names as strings,
    // say) is reported there.
    let answer = quote_spanned!(output_ty.span()=> __answer);
    let entries = quote! {{
        let #answer = #fn_ident(#occurrence);
        #p::collect_entries(#answer)
    }};

    let name = &decl.name;
    let (cron, tz) = schedule(decl);
    let enqueue_doc = format!(
        "Fires the `{name}` task now, by hand: its entries for the occurrence \"now\", each \
         enqueued under its job's plain idempotency key (a scheduled fire scopes the keys to \
         the occurrence). One answer per entry."
    );
    let next_run_doc = format!(
        "The next occurrence of the `{name}` task (cron `{cron}` in {tz}) strictly after \
         `from`; `None` when the schedule has no later one."
    );

    quote! {
        #item

        #(#docs)*
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        const _: () = {
            impl #p::Task for #handle {
                const DESCRIPTOR: #p::TaskDescriptor = #descriptor;

                fn entries(
                    __occurrence: &#p::Occurrence,
                ) -> ::std::vec::Vec<#p::Entry> {
                    #entries
                }
            }

            // A private task's handle may never be named: the scheduler reaches it through
            // the registry.
            #[allow(dead_code)]
            impl #handle {
                #[doc = #enqueue_doc]
                #vis async fn enqueue(
                    jobs: &#p::Jobs,
                ) -> ::std::result::Result<::std::vec::Vec<#p::Enqueued>, #p::JobError> {
                    #krate::__private::fire_now::<Self>(jobs).await
                }

                #[doc = #next_run_doc]
                #vis fn next_run(
                    from: #krate::__private::Timestamp,
                ) -> ::std::option::Option<#krate::__private::Timestamp> {
                    #krate::__private::next_run::<Self>(from)
                }

                /// The declaration, as the manifest shows it.
                #vis const fn descriptor() -> #p::TaskDescriptor {
                    <Self as #p::Task>::DESCRIPTOR
                }
            }

            #p::inventory::submit! {
                #p::TaskEntry::of::<#handle>()
            }
        };
    }
}

/// The handle's doc comment: what it is, then the fn's own docs.
fn handle_docs(decl: &TaskDecl<'_>) -> Vec<TokenStream> {
    let (cron, tz) = schedule(decl);
    let summary = format!(
        " Handle of the `{}` task (cron `{cron}` in {tz}), declared with `#[task]` on `{}`.",
        decl.name,
        decl.item.sig.ident.unraw(),
    );
    let mut docs = vec![quote!(#[doc = #summary])];
    let own: Vec<_> = decl
        .item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("doc"))
        .collect();
    if !own.is_empty() {
        docs.push(quote!(#[doc = ""]));
        docs.extend(own.into_iter().map(ToTokens::to_token_stream));
    }
    docs
}

/// The cron and the zone, both present once `check::task` passed.
fn schedule<'d>(decl: &'d TaskDecl<'_>) -> (&'d str, &'d str) {
    let (Some(cron), Some(tz)) = (&decl.cron, &decl.tz) else {
        unreachable!("checked by check::task::cron_is_declared and tz_is_declared");
    };
    (&cron.expr, &tz.name)
}

/// The `DESCRIPTOR` constant: the runtime's defaults, then every declared option.
fn descriptor(decl: &TaskDecl<'_>, p: &TokenStream) -> TokenStream {
    let name = &decl.name;
    let (cron, tz) = schedule(decl);
    let mut set = Vec::new();
    if let Some(catch_up) = decl.catch_up {
        let variant = format_ident!("{}", catch_up.variant());
        set.push(quote!(d.catch_up = #p::CatchUp::#variant;));
    }
    if let Some(max_catch_up) = decl.max_catch_up {
        set.push(quote!(d.max_catch_up = #max_catch_up;));
    }
    let binding = if set.is_empty() {
        quote!(d)
    } else {
        quote!(mut d)
    };
    quote! {{
        let #binding = #p::TaskDescriptor::new(#name, #cron, #tz);
        #(#set)*
        d
    }}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> Result<String, String> {
        super::super::pipeline::run::<Task>(args.parse().unwrap(), item.parse().unwrap())
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

    const DIGEST: &str = "pub fn weekday_digest(at: Occurrence) -> Vec<Entry> { vec![] }";

    #[test]
    fn the_defaults() {
        let out = expand_str(r#"cron = "0 9 * * 1-5", tz = "Europe/Paris""#, DIGEST).unwrap();
        for expected in [
            "pub struct WeekdayDigest",
            "impl :: jobs :: __private :: Task for WeekdayDigest",
            r#"let d = :: jobs :: __private :: TaskDescriptor :: new ("weekday_digest" , "0 9 * * 1-5" , "Europe/Paris")"#,
            "weekday_digest (* __occurrence)",
            "TaskEntry :: of :: < WeekdayDigest > ()",
            "pub const fn descriptor ()",
            "pub async fn enqueue (jobs : & :: jobs :: __private :: Jobs ,)",
            ":: jobs :: __private :: fire_now :: < Self > (jobs) . await",
            "pub fn next_run (from : :: jobs :: __private :: Timestamp ,)",
            ":: jobs :: __private :: next_run :: < Self > (from)",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
        assert!(!out.contains("d . catch_up"), "{out}");
    }

    #[test]
    fn every_option_lands_in_the_descriptor() {
        let out = expand_str(
            r#"name = "nightly-run", cron = "30 1 * * *", tz = "America/Bogota",
               catch_up = "run-all", max_catch_up = 5, handle = Nightly, crate = "::my_jobs""#,
            "fn nightly(at: &Occurrence) -> Vec<Entry> { vec![] }",
        )
        .unwrap();
        for expected in [
            r#"TaskDescriptor :: new ("nightly-run" , "30 1 * * *" , "America/Bogota")"#,
            "d . catch_up = :: my_jobs :: __private :: CatchUp :: RunAll",
            "d . max_catch_up = 5u32",
            "struct Nightly ;",
            "nightly (__occurrence)",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
    }

    #[test]
    fn many_errors_in_one_declaration() {
        let err = expand_str(
            r#"cron = "0 0 9 * * *", tz = "Bogota", catch_up = later, max_catch_up = 0,
               retry(attempts = 3), queue = "email""#,
            "async fn digest(a: Occurrence, b: u32) {}",
        )
        .unwrap_err();
        for expected in [
            "a task never runs a body: `retry` belongs on the `#[job]`",
            "a task never runs a body: `queue` belongs on the `#[job]`",
            "remove the seconds field",
            "did you mean `America/Bogota`?",
            "unknown catch-up policy `later`; expected `skip`, `run_once` or `run_all`",
            "`max_catch_up` must be at least 1",
            "a task only enqueues",
            "exactly one parameter",
            "add `-> Vec<Entry>`",
        ] {
            assert!(err.contains(expected), "missing `{expected}` in\n{err}");
        }
    }

    #[test]
    fn missing_cron_and_tz_are_reported_together() {
        let err = expand_str("", DIGEST).unwrap_err();
        assert!(err.contains("`#[task]` needs a schedule"), "{err}");
        assert!(
            err.contains("`#[task]` needs `tz = \"Area/City\"`"),
            "{err}"
        );
    }

    #[test]
    fn max_catch_up_needs_run_all() {
        let err = expand_str(
            r#"cron = "0 * * * *", tz = "UTC", max_catch_up = 3"#,
            DIGEST,
        )
        .unwrap_err();
        assert!(
            err.contains("with `skip` (the default) it has no effect"),
            "{err}"
        );
    }

    #[test]
    fn unknown_arguments_list_what_is_taken_and_gain_the_code() {
        let err =
            expand_str(r#"cron = "0 * * * *", tz = "UTC", catchup = skip"#, DIGEST).unwrap_err();
        assert_eq!(
            err,
            "`#[task]` takes no argument `catchup`; did you mean `catch_up`? the arguments it \
             takes are `cron`, `tz`, `catch_up`, `max_catch_up`, `name`, `handle`, `crate` \
             (X_JOB_DECLARATION_INVALID)"
        );
    }
}
