//! `#[consumer]`: its part of the pipeline (`super::pipeline`), and what it emits: the handler
//! unchanged, then a `#[job]` (key `<name>:{turn}`, a fleet-wide cap of one: one lap at a
//! time) whose body reads the declared source in laps through `jobs::consumer::run_consumer`,
//! and a `#[task]`, `<name>.supervisor`, that enqueues it every minute by default. Both go
//! through their own attributes, so the pair is checked like any job and task.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

use super::pipeline::impl_macro;
use crate::args::consumer::ConsumerArgs;
use crate::check;
use crate::model::ConsumerDecl;

/// The supervisor's default schedule; the runtime's `jobs::consumer::DEFAULT_SUPERVISOR_CRON`
/// is the same (a test holds them together).
const DEFAULT_SUPERVISOR_CRON: &str = "* * * * *";
/// The defaults the runtime's `DEFAULT_CONSUMER_*` name, held together by the same test.
const DEFAULT_BATCH: u32 = 100;
const DEFAULT_LAP: u32 = 100;
const DEFAULT_POLL_MILLIS: u64 = 5_000;

/// `#[consumer]`, for the expansion pipeline.
pub struct Consumer;

impl_macro! {
    impl Macro for Consumer {
        name: "consumer",
        wrong_item: "`#[consumer]` goes on the per-page handler: `async fn \
            handle(pass: Pass, rows: Vec<Row>) -> Result<(), JobError>` (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: ConsumerArgs,
        decl: ConsumerDecl,
        refused: crate::args::consumer::consumer_refused,
        check: check::consumer,
        emit: quote_consumer,
        stand_in: stand_in,
        rename: [handle, crate_path],
    }
}

/// What a refused `#[consumer]` leaves for its call sites: the handle, with a `Job` impl whose
/// body never runs. Nothing when the handle's name clashes with the fn.
fn stand_in(decl: &ConsumerDecl<'_>) -> TokenStream {
    let handle = &decl.handle;
    if *handle == decl.item.sig.ident {
        return TokenStream::new();
    }
    let vis = &decl.item.vis;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let stand_in_job = super::fallback::stand_in_job(
        &p,
        handle,
        decl.name.as_deref().unwrap_or(""),
        &quote!(#krate::consumer::ConsumerLap),
        "ConsumerLap",
        &quote!(#krate::consumer::ConsumerReport),
    );
    quote! {
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        #[allow(dead_code, unused_variables, clippy::all)]
        const _: () = {
            #stand_in_job
        };
    }
}

fn quote_consumer(decl: &ConsumerDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let krate_text = krate.to_token_stream().to_string().replace(' ', "");
    let (Some(name), Some(source)) = (&decl.name, &decl.source) else {
        unreachable!("checked by check::consumer");
    };
    let task_name = format!("{name}.supervisor");
    let task_handle = format_ident!("{}Supervisor", handle);
    let job_fn = format_ident!("__jobs_consumer_{}", fn_ident);
    let task_fn = format_ident!("__jobs_consumer_supervisor_{}", fn_ident);
    let cron = decl
        .cron
        .map_or_else(|| quote!(#DEFAULT_SUPERVISOR_CRON), |c| quote!(#c));
    let tz = decl.tz.map_or_else(|| quote!("UTC"), |t| quote!(#t));
    let batch = decl.batch.unwrap_or(DEFAULT_BATCH);
    let lap = decl.lap.unwrap_or(DEFAULT_LAP);
    let poll = decl.poll_millis.unwrap_or(DEFAULT_POLL_MILLIS);
    let key = format!("{name}:{{turn}}");
    let mut job_args = vec![
        quote!(name = #name),
        quote!(key = #key),
        quote!(tenant = none),
        quote!(concurrency = 1),
        quote!(keep_result),
        quote!(handle = #handle),
        quote!(crate = #krate_text),
    ];
    if let Some(queue) = &decl.queue {
        job_args.push(quote!(queue = #queue));
    }
    if let Some(timeout) = decl.timeout {
        job_args.push(quote!(timeout = #timeout));
    }
    // A handler whose rows are not the source's is reported at the source.
    let page = quote_spanned! {source.span()=>
        |__pass, __after, __limit| #krate::__private::join_page(__pass, __after, __limit, #source, #fn_ident)
    };
    let job_doc = format!(
        " The `{name}` consumer's job: one lap over `{}`, each page handled by `{fn_ident}`, \
         declared with `#[consumer]`.",
        source.to_token_stream().to_string().replace(' ', "")
    );
    let task = super::purge::FiringTask {
        doc: format!(
            " The task that keeps the `{name}` consumer running (one lap at a time), declared \
             with `#[consumer]`."
        ),
        name: &task_name,
        cron,
        tz,
        handle: task_handle,
        task_fn,
        job: handle,
        input: quote!(#krate::consumer::ConsumerLap),
    }
    .quote(vis, krate);

    quote! {
        #item

        #[doc = #job_doc]
        #[#krate::job(#(#job_args),*)]
        #vis async fn #job_fn(
            run: #krate::Run,
            lap: #krate::consumer::ConsumerLap,
        ) -> ::std::result::Result<#krate::consumer::ConsumerReport, #krate::JobError> {
            #krate::consumer::run_consumer::<#handle, _, _>(
                run,
                lap,
                #krate::consumer::ConsumerSpec {
                    name: #name,
                    batch: #batch,
                    lap: #lap,
                    poll: ::std::time::Duration::from_millis(#poll),
                },
                #page,
            )
            .await
        }

        #task
    }
}
