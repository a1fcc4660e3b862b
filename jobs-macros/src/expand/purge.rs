//! `#[purge]`: its part of the pipeline (`super::pipeline`), and what it emits: the targets fn
//! unchanged, then a `#[job]` whose body is one `Purge` pass over the targets that fn builds,
//! and a `#[task]` that fires it (by default `23 * * * *` in UTC). Both go through their own
//! attributes, so the pair is checked like any job and task. `#[partitions]`
//! (`super::partitions`) is the same shape over other types: [`quote_pass`] and
//! [`stand_in_pass`] emit either.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::ItemFn;

use super::pipeline::impl_macro;
use crate::args::purge::PurgeArgs;
use crate::check;
use crate::model::{PassDecl, PassKind, PurgeDecl, ScheduledPass};

/// The purge task's default schedule; the runtime's `jobs::purge::DEFAULT_PURGE_CRON` is the
/// same (a test holds them together).
const DEFAULT_PURGE_CRON: &str = "23 * * * *";

/// `#[purge]`, for the expansion pipeline.
pub struct Purge;

/// What a purge is, as a kind of scheduled pass.
pub struct PurgeKind;

impl PassKind for PurgeKind {
    const PASS: &'static ScheduledPass = &ScheduledPass {
        attr: "purge",
        module: "purge",
        builder: "Purge",
        input: "PurgePass",
        report: "PurgeReport",
        key: "purge",
        default_cron: DEFAULT_PURGE_CRON,
        takes_input: false,
        keeps_report: false,
        builds: "one pass's targets",
        example: "app.purge",
        suffix: "Purge",
    };
}

impl_macro! {
    impl Macro for Purge {
        name: "purge",
        wrong_item: "`#[purge]` goes on the fn that builds one pass's \
            targets: `fn targets(run: &Run) -> Result<Purge, JobError>` (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: PurgeArgs,
        decl: PurgeDecl,
        refused: crate::args::purge::purge_refused,
        check: check::scheduled_pass,
        emit: quote_pass,
        stand_in: stand_in_pass,
        rename: [handle, crate_path],
    }
}

/// What a refused `#[purge]` or `#[partitions]` leaves for its call sites: the handle, with
/// a `Job` impl whose body never runs. Nothing when the handle's name clashes with the fn.
pub fn stand_in_pass<K: PassKind>(decl: &PassDecl<'_, K>) -> TokenStream {
    let handle = &decl.handle;
    if *handle == decl.item.sig.ident {
        return TokenStream::new();
    }
    let vis = &decl.item.vis;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let name = decl.name.as_deref().unwrap_or("");
    let pass = decl.pass();
    let (module, input, report) = (
        format_ident!("{}", pass.module),
        format_ident!("{}", pass.input),
        format_ident!("{}", pass.report),
    );
    let stand_in_job = super::fallback::stand_in_job(
        &p,
        handle,
        name,
        &quote!(#krate::#module::#input),
        pass.input,
        &quote!(#krate::#module::#report),
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

/// The fn unchanged, its `#[job]` (one pass over what the fn builds) and its `#[task]`.
pub fn quote_pass<K: PassKind>(decl: &PassDecl<'_, K>) -> TokenStream {
    let pass = decl.pass();
    let (module, builder_input, report) = (
        format_ident!("{}", pass.module),
        format_ident!("{}", pass.input),
        format_ident!("{}", pass.report),
    );
    let (attr, key, default_cron) = (pass.attr, pass.key, pass.default_cron);
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let krate_text = krate.to_token_stream().to_string().replace(' ', "");
    let Some(name) = &decl.name else {
        unreachable!("checked by check::scheduled_pass");
    };
    let task_name = decl
        .task
        .clone()
        .unwrap_or_else(|| format!("{name}.schedule"));
    let task_handle = format_ident!("{}Schedule", handle);
    let job_fn = format_ident!("__jobs_{}_{}", attr, fn_ident);
    let task_fn = format_ident!("__jobs_{}_schedule_{}", attr, fn_ident);
    let cron = decl
        .cron
        .map_or_else(|| quote!(#default_cron), |c| quote!(#c));
    let tz = decl.tz.map_or_else(|| quote!("UTC"), |t| quote!(#t));
    let mut job_args = vec![
        quote!(name = #name),
        quote!(key = #key),
        quote!(tenant = none),
        quote!(handle = #handle),
        quote!(crate = #krate_text),
    ];
    if pass.keeps_report {
        job_args.push(quote!(keep_result));
    }
    if let Some(queue) = &decl.queue {
        job_args.push(quote!(queue = #queue));
    }
    if let Some(timeout) = decl.timeout {
        job_args.push(quote!(timeout = #timeout));
    }
    let targets = if item.sig.asyncness.is_some() {
        quote!(#fn_ident(&run).await?)
    } else {
        quote!(#fn_ident(&run)?)
    };
    let job_doc = format!(
        " The `{name}` {attr} job: one pass over {} `{fn_ident}` builds, declared with \
         `#[{attr}]`.",
        pass.builds
    );
    let task = FiringTask {
        doc: format!(" The task that fires the `{name}` {attr} job, declared with `#[{attr}]`."),
        name: &task_name,
        cron,
        tz,
        handle: task_handle,
        task_fn,
        job: handle,
        input: quote!(#krate::#module::#builder_input),
    }
    .quote(vis, krate);
    let (input, run_pass) = if pass.takes_input {
        (quote!(input), quote!(#targets.run(&run, &input).await))
    } else {
        (quote!(_input), quote!(#targets.run(&run).await))
    };

    quote! {
        #item

        #[doc = #job_doc]
        #[#krate::job(#(#job_args),*)]
        #vis async fn #job_fn(
            run: #krate::Run,
            #input: #krate::#module::#builder_input,
        ) -> ::std::result::Result<#krate::#module::#report, #krate::JobError> {
            #run_pass
        }

        #task
    }
}

/// The cron task a factory's job is fired by (a purge's, a partitions job's, a consumer's
/// supervisor): one entry of `handle`, its input's default, at each occurrence.
pub struct FiringTask<'a> {
    /// The doc comment.
    pub doc: String,
    /// The task's name.
    pub name: &'a str,
    /// The schedule and zone, as written or defaulted.
    pub cron: TokenStream,
    pub tz: TokenStream,
    /// The task's handle and fn.
    pub handle: syn::Ident,
    pub task_fn: syn::Ident,
    /// The job it fires, and that job's input type.
    pub job: &'a syn::Ident,
    pub input: TokenStream,
}

impl FiringTask<'_> {
    /// The `#[task]` fn, through the task's own attribute.
    pub fn quote(&self, vis: &syn::Visibility, krate: &syn::Path) -> TokenStream {
        let krate_text = krate.to_token_stream().to_string().replace(' ', "");
        let FiringTask {
            doc,
            name,
            cron,
            tz,
            handle,
            task_fn,
            job,
            input,
        } = self;
        quote! {
            #[doc = #doc]
            #[#krate::task(name = #name, cron = #cron, tz = #tz, handle = #handle, crate = #krate_text)]
            #vis fn #task_fn(_at: &#krate::Occurrence) -> ::std::vec::Vec<#krate::Entry> {
                ::std::vec![#krate::Entry::of::<#job>(<#input as ::std::default::Default>::default())]
            }
        }
    }
}
