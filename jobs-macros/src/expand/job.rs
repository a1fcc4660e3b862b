//! `#[job]`: its part of the pipeline (`super::pipeline`), and what it emits: the fn
//! unchanged, its handle type, the `Job` impl, the typed enqueue methods, the registry entry
//! and the input assertion.
//!
//! Generated code names the runtime only through `<crate>::__private` (default `::jobs`), and
//! std only through absolute `::std` paths, so nothing depends on what the user imported.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Expr, ItemFn, Pat, PatType, Type};

use super::descriptor::{job_descriptor, JobShape};
use super::pipeline::impl_macro;
use crate::args::job::JobArgs;
use crate::check;
use crate::model::{Concurrency, JobDecl};
use crate::value::key::KeySource;
use crate::value::key_template::KeyTemplate;
use crate::value::tenant::Tenant;

/// `#[job]`, for the expansion pipeline.
pub struct Job;

impl_macro! {
    impl Macro for Job {
        name: "job",
        wrong_item: "`#[job]` goes on an `async fn` taking the run context and \
            the input: `async fn send_welcome(run: Run, input: Welcome) -> Result<(), JobError>` \
            (X_JOB_DECLARATION_INVALID)",
        item: ItemFn,
        args: JobArgs,
        decl: JobDecl,
        refused: crate::args::job::refused,
        check: check::job,
        emit: quote_job,
        stand_in: stand_in,
        rename: [handle, crate_path],

        /// A step refused for its borrowed output, re-emitted as written, would add rustc's
        /// "`Deserialize` is not general enough" to the macro's error.
        fn refused_item(decl: &JobDecl<'_>, item: TokenStream) -> TokenStream {
            let krate = &decl.crate_path;
            let mut unborrowed = decl.item.clone();
            if check::step_outputs::without_borrowed_steps(
                &mut unborrowed,
                &quote!(#krate::__private::refused_step),
            ) {
                unborrowed.into_token_stream()
            } else {
                item
            }
        }
    }
}

/// What a refused `#[job]` leaves for its call sites: the handle, with the methods and the
/// `Job` impl the real one has, whose bodies never run (the crate does not compile). Nothing
/// when the handle's name is itself the problem (it clashes with the fn, the input type or a
/// name the fn uses).
fn stand_in(decl: &JobDecl<'_>) -> TokenStream {
    let handle = &decl.handle;
    let input_name = decl.input_ty().and_then(|ty| match ty {
        Type::Path(path) => path.path.segments.last().map(|s| &s.ident),
        _ => None,
    });
    if *handle == decl.item.sig.ident
        || input_name == Some(handle)
        || crate::check::handle::first_use(decl.item, handle).is_some()
    {
        return TokenStream::new();
    }
    let vis = &decl.item.vis;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    let sig = &decl.item.sig;
    let concrete = sig.generics.params.is_empty() && sig.generics.where_clause.is_none();
    // The input the user meant: a reference's referent, since a by-reference input is refused.
    let input_ty = decl.input_ty().map(|ty| match ty {
        Type::Reference(reference) => &*reference.elem,
        ty => ty,
    });
    let body = match input_ty.filter(|_| concrete) {
        Some(input_ty) => {
            let name = &decl.name;
            let input_name = type_text(input_ty);
            let output = match decl.output_ty() {
                Some(output_ty) => quote!(<#output_ty as #p::JobReturn>::Output),
                None => quote!(()),
            };
            let methods = handle_methods(decl, &p, input_ty);
            let stand_in_job = super::fallback::stand_in_job(
                &p,
                handle,
                name,
                &quote!(#input_ty),
                &input_name,
                &output,
            );
            quote! {
                #stand_in_job

                #methods
            }
        }
        None => untyped_methods(decl, &p),
    };
    quote! {
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        #[allow(dead_code, unused_variables, clippy::all)]
        const _: () = {
            #body
        };
    }
}

/// The handle's methods when the input type is not known: any argument type-checks.
fn untyped_methods(decl: &JobDecl<'_>, p: &TokenStream) -> TokenStream {
    let vis = &decl.item.vis;
    let handle = &decl.handle;
    let result = decl.keep_result.then(|| {
        quote! {
            #vis async fn result<O>(
                _jobs: &#p::Jobs,
                _id: #p::JobId,
            ) -> ::std::result::Result<::std::option::Option<O>, #p::JobError> {
                ::std::unreachable!()
            }
        }
    });
    quote! {
        impl #handle {
            #vis async fn enqueue<I>(
                _jobs: &#p::Jobs,
                _input: I,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                ::std::unreachable!()
            }
            #vis async fn enqueue_with<I>(
                _jobs: &#p::Jobs,
                _input: I,
                _options: #p::EnqueueOptions,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                ::std::unreachable!()
            }
            #vis async fn enqueue_many<I>(
                _jobs: &#p::Jobs,
                _inputs: I,
            ) -> ::std::result::Result<::std::vec::Vec<#p::Enqueued>, #p::JobError> {
                ::std::unreachable!()
            }
            #vis async fn enqueue_in<I>(
                _jobs: &#p::Jobs,
                _conn: &mut impl #p::CallerConnection,
                _input: I,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                ::std::unreachable!()
            }
            #vis async fn enqueue_in_with<I>(
                _jobs: &#p::Jobs,
                _conn: &mut impl #p::CallerConnection,
                _input: I,
                _options: #p::EnqueueOptions,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                ::std::unreachable!()
            }
            #vis fn descriptor() -> #p::JobDescriptor {
                ::std::unreachable!()
            }
            #result
        }
    }
}

/// The expansion of a checked declaration.
fn quote_job(decl: &JobDecl<'_>) -> TokenStream {
    let item = decl.item;
    let vis = &item.vis;
    let fn_ident = &item.sig.ident;
    let handle = &decl.handle;
    let krate = &decl.crate_path;
    let p = quote!(#krate::__private);
    // Both are present once `check::job` passed.
    let (Some(input_ty), Some(output_ty)) = (decl.input_ty(), decl.output_ty()) else {
        unreachable!("checked by check::job::fn_takes_run_and_input and fn_returns_a_result");
    };
    let run_ty = decl.run_ty().unwrap_or(input_ty);

    let docs = handle_docs(decl);
    let descriptor = descriptor(decl, &p, input_ty);
    // Spanned at the return type, so a body that does not return a `Result` is reported there
    // first, with `JobReturn`'s message.
    let output = quote_spanned!(output_ty.span()=> <#output_ty as #p::JobReturn>::Output);
    // The user's fn is called with the runtime's `Run`; a mismatch points at the parameter.
    let run_arg = quote_spanned!(run_ty.span()=> __run);
    let input_arg = quote_spanned!(input_ty.span()=> __input);
    let run_body = quote! {
        ::std::boxed::Box::pin(async move {
            #p::JobReturn::into_job_result(#fn_ident(#run_arg, #input_arg).await)
        })
    };
    let key = key_fn_body(decl.key.as_ref(), input_ty, &p);
    let tenant = tenant_fn_body(decl.tenant.as_ref(), input_ty, &p);
    let concurrency_key = match &decl.concurrency {
        Some(Concurrency::Keyed { key, .. }) => {
            let body = key_fn_body(Some(key), input_ty, &p);
            quote! {
                #[allow(clippy::redundant_closure_call)]
                fn concurrency_key(
                    input: &#input_ty,
                ) -> ::std::option::Option<::std::string::String> {
                    ::std::option::Option::Some(#body)
                }
            }
        }
        _ => TokenStream::new(),
    };
    let rate_key = match decl.rate.as_ref().and_then(|rate| rate.key.as_ref()) {
        Some(key) => {
            let body = key_fn_body(Some(key), input_ty, &p);
            quote! {
                #[allow(clippy::redundant_closure_call)]
                fn rate_key(
                    input: &#input_ty,
                ) -> ::std::option::Option<::std::string::String> {
                    ::std::option::Option::Some(#body)
                }
            }
        }
        None => TokenStream::new(),
    };
    let on_settled = decl.on_settled.as_ref().map(|hook| {
        // The settled run goes through `SettledHookArg`, so a hook over other types is
        // refused with that trait's message, at the hook.
        let call = quote_spanned! {hook.span()=>
            #hook(<_ as #p::SettledHookArg<#input_ty, Self::Output>>::from_settled(__settled)).await
        };
        quote! {
            fn on_settled(
                __settled: #p::Settled<#input_ty, Self::Output>,
            ) -> #p::BoxFuture<'static, ::std::result::Result<(), #p::JobError>> {
                ::std::boxed::Box::pin(async move {
                    #p::JobReturn::into_job_result(#call).map(|_| ())
                })
            }
        }
    });
    let assert_input = quote_spanned! {input_ty.span()=>
        const _: fn() = || {
            fn assert_input<T: #p::JobInput>() {}
            assert_input::<#input_ty>();
        };
    };
    let methods = handle_methods(decl, &p, input_ty);

    quote! {
        #item

        #(#docs)*
        #[derive(Debug, Clone, Copy, Default)]
        #vis struct #handle;

        const _: () = {
            // First, so that a bad input type is reported with the job input's own message
            // before the bounds that follow from it.
            #assert_input

            impl #p::Job for #handle {
                type Input = #input_ty;
                type Output = #output;

                const DESCRIPTOR: #p::JobDescriptor = #descriptor;

                // A declared closure is called in place, once: that is the point of it.
                #[allow(clippy::redundant_closure_call)]
                fn idempotency_key(input: &#input_ty) -> ::std::string::String {
                    #key
                }

                #[allow(clippy::redundant_closure_call)]
                fn tenant(input: &#input_ty) -> ::std::option::Option<::std::string::String> {
                    #tenant
                }

                #concurrency_key

                #rate_key

                fn run(
                    __run: #p::Run,
                    __input: #input_ty,
                ) -> #p::BoxFuture<'static, ::std::result::Result<Self::Output, #p::JobError>> {
                    #run_body
                }

                #on_settled
            }

            #methods

            #p::inventory::submit! {
                #p::JobEntry::of::<#handle>()
            }
        };
    }
}

/// The handle's inherent methods: the typed enqueue calls and `descriptor()`.
fn handle_methods(decl: &JobDecl<'_>, p: &TokenStream, input_ty: &Type) -> TokenStream {
    let vis = &decl.item.vis;
    let handle = &decl.handle;
    let name = &decl.name;
    let enqueue_doc = format!(
        "Enqueues one run of the `{name}` job.\n\nAnswers the run's ids, with `deduped` set \
         when a live run already holds the same idempotency key."
    );
    let enqueue_with_doc = format!(
        "Enqueues one run of the `{name}` job with per-call options (run time, run id, queue, \
         tenant)."
    );
    let enqueue_many_doc = format!("Enqueues one run of the `{name}` job per input.");
    let result = decl.keep_result.then(|| {
        let result_doc = format!(
            "The result the `{name}` job `id` kept (`keep_result`): `None` until it is done; \
             `X_JOB_NOT_FOUND` for an unknown id or another job's."
        );
        // Generic over the output, bound in its where clause: an output that cannot be kept is
        // refused once, at the return type (`KeptResult::of`), not again here.
        quote! {
            #[doc = #result_doc]
            #vis async fn result<O>(
                jobs: &#p::Jobs,
                id: #p::JobId,
            ) -> ::std::result::Result<::std::option::Option<O>, #p::JobError>
            where
                Self: #p::Job<Output = O>,
                O: #p::JobOutput,
            {
                jobs.job_result::<Self>(id).await
            }
        }
    });
    // A job that keeps its result may be invoked by a parent (`run.invoke`).
    let invocable = decl
        .keep_result
        .then(|| quote!(impl #p::Invocable for #handle {}));

    quote! {
        impl #handle {
            #[doc = #enqueue_doc]
            #vis async fn enqueue(
                jobs: &#p::Jobs,
                input: #input_ty,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                jobs.enqueue::<Self>(input).await
            }

            #[doc = #enqueue_with_doc]
            #vis async fn enqueue_with(
                jobs: &#p::Jobs,
                input: #input_ty,
                options: #p::EnqueueOptions,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                jobs.enqueue_with::<Self>(input, options).await
            }

            #[doc = #enqueue_many_doc]
            #vis async fn enqueue_many<I>(
                jobs: &#p::Jobs,
                inputs: I,
            ) -> ::std::result::Result<::std::vec::Vec<#p::Enqueued>, #p::JobError>
            where
                I: ::std::iter::IntoIterator<Item = #input_ty>,
            {
                jobs.enqueue_many::<Self, I>(inputs).await
            }

            /// Enqueues one run on the caller's Postgres connection or transaction: it
            /// exists if and only if that transaction commits.
            #vis async fn enqueue_in(
                jobs: &#p::Jobs,
                conn: &mut impl #p::CallerConnection,
                input: #input_ty,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                jobs.enqueue_in::<Self>(conn, input).await
            }

            /// [`Self::enqueue_in`] with per-call options.
            #vis async fn enqueue_in_with(
                jobs: &#p::Jobs,
                conn: &mut impl #p::CallerConnection,
                input: #input_ty,
                options: #p::EnqueueOptions,
            ) -> ::std::result::Result<#p::Enqueued, #p::JobError> {
                jobs.enqueue_in_with::<Self>(conn, input, options).await
            }

            /// The declaration, as the manifest shows it.
            #vis const fn descriptor() -> #p::JobDescriptor {
                <Self as #p::Job>::DESCRIPTOR
            }

            #result
        }

        #invocable
    }
}

/// The handle's doc comment: what it is, then the fn's own docs.
fn handle_docs(decl: &JobDecl<'_>) -> Vec<TokenStream> {
    let queue = decl.queue.as_deref().unwrap_or("default");
    let summary = format!(
        " Handle of the `{}` job (queue `{queue}`), declared with `#[job]` on `{}`.",
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

/// The `DESCRIPTOR` constant.
fn descriptor(decl: &JobDecl<'_>, p: &TokenStream, input_ty: &Type) -> TokenStream {
    let tenant_mode = match &decl.tenant {
        Some(Tenant::Field(field)) => {
            let field = field.unraw().to_string();
            quote!(#p::TenantMode::Field(#field))
        }
        Some(Tenant::Derived(_)) => quote!(#p::TenantMode::Derived),
        Some(Tenant::None) | None => quote!(#p::TenantMode::None),
    };
    let input_name = type_text(input_ty);
    let mut shape = JobShape::new(&decl.name, tenant_mode, quote!(#input_ty), &input_name);
    shape.queue = decl.queue.as_deref();
    shape.retry = Some(&decl.retry);
    shape.dead_letter = decl.dead_letter;
    shape.timeout = decl.timeout.as_ref();
    shape.step_timeout = decl.step_timeout.as_ref();
    shape.event_poll = decl.event_poll.as_ref();
    shape.expires_in = decl.expires_in.as_ref();
    shape.debounce = decl.debounce.as_ref();
    shape.unique_for = decl.unique_for.as_ref();
    shape.concurrency = decl.concurrency.as_ref();
    shape.rate = decl.rate.as_ref();
    shape.on_settled = decl.on_settled.is_some();
    shape.priority = decl.priority;
    shape.on_dependency_failure = decl.on_dependency_failure;
    shape.result = kept_result(decl, p);
    job_descriptor(p, shape)
}

/// `KeptResult::of::<Output>("Output")` for a job declared `keep_result`, spanned at the return
/// type: an output that cannot be kept is refused there, with `JobOutput`'s message.
fn kept_result(decl: &JobDecl<'_>, p: &TokenStream) -> Option<TokenStream> {
    let output_ty = decl.output_ty().filter(|_| decl.keep_result)?;
    let output_name = ok_type(output_ty).map_or_else(|| type_text(output_ty), type_text);
    Some(quote_spanned! {output_ty.span()=>
        #p::KeptResult::of::<<#output_ty as #p::JobReturn>::Output>(#output_name)
    })
}

/// The `T` of a return type written `Result<T, E>` (any path ending in `Result`), for the
/// manifest; `None` for a return type written otherwise (an alias), shown whole.
fn ok_type(ty: &Type) -> Option<&Type> {
    let Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Result" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// The body of a key fn (`idempotency_key`, `concurrency_key`, `rate_key`) over `input: &Input`.
fn key_fn_body(key: Option<&KeySource>, input_ty: &Type, p: &TokenStream) -> TokenStream {
    match key {
        Some(KeySource::Template(template)) => template_body(template),
        Some(KeySource::Callable(expr)) => {
            let callable = with_input_type(expr, input_ty);
            quote_spanned!(expr.span()=> #p::to_key(&(#callable)(input)))
        }
        None => unreachable!("checked by check::job::key_is_declared"),
    }
}

/// `format!("welcome:{}", input.user_id)`, with every field read spanned at the template, so a
/// field the input lacks is reported by rustc at the literal ("no field `x` on type ...").
fn template_body(template: &KeyTemplate) -> TokenStream {
    let span = template.lit.span();
    let format = template.format_string();
    let fields: Vec<TokenStream> = template
        .fields()
        .map(|path| {
            let input = syn::Ident::new("input", span);
            quote_spanned!(span=> #input #(.#path)*)
        })
        .collect();
    if fields.is_empty() {
        quote!(::std::string::String::from(#format))
    } else {
        quote!(::std::format!(#format, #(#fields),*))
    }
}

/// The body of `tenant(input: &Input)`.
fn tenant_fn_body(tenant: Option<&Tenant>, input_ty: &Type, p: &TokenStream) -> TokenStream {
    match tenant {
        Some(Tenant::None) => quote!(::std::option::Option::None),
        Some(Tenant::Field(field)) => {
            let input = syn::Ident::new("input", field.span());
            quote_spanned! {field.span()=>
                ::std::option::Option::Some(#p::to_key(&#input.#field))
            }
        }
        Some(Tenant::Derived(expr)) => {
            let callable = with_input_type(expr, input_ty);
            quote_spanned! {expr.span()=>
                ::std::option::Option::Some(#p::to_key(&(#callable)(input)))
            }
        }
        None => unreachable!("checked by check::job::tenant_is_declared"),
    }
}

/// A closure written without a parameter type (`|w| w.org_id.clone()`) gets `&Input`, so
/// calling it in place type-checks as if the user had written the type.
fn with_input_type(expr: &Expr, input_ty: &Type) -> Expr {
    let Expr::Closure(closure) = expr else {
        return expr.clone();
    };
    if closure.inputs.len() != 1 || matches!(closure.inputs[0], Pat::Type(_)) {
        return expr.clone();
    }
    let mut closure = closure.clone();
    let pat = closure.inputs[0].clone();
    let span = pat.span();
    closure.inputs[0] = Pat::Type(PatType {
        attrs: Vec::new(),
        pat: Box::new(pat),
        colon_token: syn::Token![:](span),
        ty: Box::new(syn::parse_quote_spanned!(span=> &#input_ty)),
    });
    Expr::Closure(closure)
}

/// The input type as written, for people reading the manifest: `Vec<Welcome>`, not
/// `Vec < Welcome >`.
pub(crate) fn type_text(ty: &Type) -> String {
    let spaced = ty.to_token_stream().to_string();
    let chars: Vec<char> = spaced.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '\'';
    let mut text = String::with_capacity(spaced.len());
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let before = i.checked_sub(1).map(|i| chars[i]);
            let after = chars.get(i + 1).copied();
            let between_words = before.is_some_and(word) && after.is_some_and(word);
            if !between_words && before != Some(',') {
                continue;
            }
        }
        text.push(c);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expand_str(args: &str, item: &str) -> Result<String, String> {
        super::super::pipeline::run::<Job>(args.parse().unwrap(), item.parse().unwrap())
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

    const WELCOME: &str = "pub async fn send_welcome(run: Run, input: Welcome) \
                           -> Result<Receipt, JobError> { Ok(Receipt) }";

    #[test]
    fn template_key_and_field_tenant() {
        let out = expand_str(r#"key = "welcome:{user_id}", tenant = org_id"#, WELCOME).unwrap();
        assert!(out.contains("pub struct SendWelcome"), "{out}");
        assert!(
            out.contains(r#"format ! ("welcome:{}" , input . user_id)"#),
            "{out}"
        );
        assert!(out.contains(r#"TenantMode :: Field ("org_id")"#), "{out}");
        assert!(out.contains("to_key (& input . org_id)"), "{out}");
        assert!(out.contains(r#""Welcome""#), "{out}");
        assert!(!out.contains("concurrency_key"), "{out}");
        assert!(!out.contains("fn on_settled"), "{out}");
    }

    #[test]
    fn every_option_lands_in_the_descriptor() {
        let out = expand_str(
            r#"key = |w: &Welcome| format!("w:{}", w.user_id), tenant = none,
               name = "send-welcome", queue = "email",
               retry(attempts = 5, backoff = linear, delay = "1s", max_delay = "1h", jitter = full),
               dead_letter = false, timeout = "10m", step_timeout = "30s", event_poll = "500ms",
               concurrency(key = "{org_id}", limit = 2, when_busy = fail),
               on_settled = hooks::settled, handle = Welcomer, crate = "::my_jobs", priority = -3"#,
            WELCOME,
        )
        .unwrap();
        for expected in [
            r#"JobDescriptor :: new ("send-welcome" , :: my_jobs :: __private :: TenantMode :: None"#,
            r#"d . queue = "email""#,
            "d . retry . attempts = 5u32",
            "Backoff :: Linear",
            "from_millis (1000u64)",
            "from_millis (3600000u64)",
            "Jitter :: Full",
            "d . dead_letter = false",
            "from_millis (600000u64)",
            "from_millis (30000u64)",
            "d . event_poll = :: std :: time :: Duration :: from_millis (500u64)",
            "limit : 2u32 , keyed : true , when_busy : :: my_jobs :: __private :: WhenBusy :: Fail",
            "d . on_settled = true",
            "d . priority = - 3i16",
            "fn concurrency_key",
            r#"format ! ("{}" , input . org_id)"#,
            "hooks :: settled (< _ as :: my_jobs :: __private :: SettledHookArg < Welcome , Self :: Output >> :: from_settled (__settled)) . await",
            "struct Welcomer",
            "impl :: my_jobs :: __private :: Job for Welcomer",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
    }

    #[test]
    fn keep_result_lands_in_the_descriptor_with_a_typed_read() {
        let out = expand_str(r#"key = "k", tenant = none, keep_result"#, WELCOME).unwrap();
        for expected in [
            "d . result = :: std :: option :: Option :: Some (:: jobs :: __private :: KeptResult :: of ::",
            "Result < Receipt , JobError > as :: jobs :: __private :: JobReturn > :: Output > (\"Receipt\"))",
            "async fn result < O > (jobs : & :: jobs :: __private :: Jobs , id : :: jobs :: __private :: JobId",
            "jobs . job_result :: < Self > (id) . await",
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
        // Off unless asked, or when switched off by name.
        for args in [
            r#"key = "k", tenant = none"#,
            r#"key = "k", tenant = none, keep_result = false"#,
        ] {
            let out = expand_str(args, WELCOME).unwrap();
            assert!(!out.contains("KeptResult"), "{out}");
            assert!(!out.contains("async fn result"), "{out}");
        }
        let err = expand_str(r#"key = "k", tenant = none, keep_result(yes)"#, WELCOME).unwrap_err();
        assert!(
            err.contains("keep_result") && err.ends_with("(X_JOB_DECLARATION_INVALID)"),
            "{err}"
        );
        let err = expand_str(r#"key = "k", tenant = none, keep_result = 1"#, WELCOME).unwrap_err();
        assert!(
            err.contains("`keep_result` takes `true` or `false`"),
            "{err}"
        );
    }

    #[test]
    fn untyped_closures_get_the_input_type() {
        let out = expand_str(
            r#"key = |w| format!("w:{}", w.user_id), tenant = |w| w.org_id.clone()"#,
            WELCOME,
        )
        .unwrap();
        assert!(out.contains("(| w : & Welcome | format !"), "{out}");
        assert!(
            out.contains("(| w : & Welcome | w . org_id . clone ())"),
            "{out}"
        );
        assert!(out.contains("TenantMode :: Derived"), "{out}");
    }

    #[test]
    fn missing_key_and_tenant_are_reported_together() {
        let err = expand_str("", WELCOME).unwrap_err();
        assert!(err.contains("X_IDEMPOTENCY_REQUIRED"), "{err}");
        assert!(err.contains("X_JOB_TENANT_REQUIRED"), "{err}");
    }

    #[test]
    fn many_errors_in_one_declaration() {
        let err = expand_str(
            r#"key = "k:{}", tenant = none, retry(attempts = 0, backoff = expo, jitter = some),
               timeout = "0s", step_timeout = "-5s", event_poll = "3 fortnights",
               concurrency = 0, priority = 6"#,
            "fn job(run: Run) {}",
        )
        .unwrap_err();
        for expected in [
            "`{}` names no field",
            "`attempts` must be at least 1",
            "unknown backoff `expo`; expected `fixed`, `linear` or `exponential`",
            "unknown jitter `some`; expected `full`, `equal` or `none`",
            "invalid duration `0s` for `timeout`",
            "invalid duration `-5s` for `step_timeout`: a duration cannot be negative",
            "invalid duration `3 fortnights` for `event_poll`",
            "`concurrency` must be at least 1",
            "`priority = 6` is outside -5..=5",
            "must be `async`",
            "found one parameter",
            "returns `Result<Output, JobError>`",
        ] {
            assert!(err.contains(expected), "missing `{expected}` in\n{err}");
        }
    }

    #[test]
    fn structural_errors_list_what_is_taken_and_gain_the_code() {
        let err = expand_str(r#"key = "k", tenant = none, qeue = "x""#, WELCOME).unwrap_err();
        assert!(
            err.starts_with("`#[job]` takes no argument `qeue`; did you mean `queue`? the arguments it takes are `key`, `tenant`,")
                && err.ends_with("`crate` (X_JOB_DECLARATION_INVALID)"),
            "{err}"
        );
        let err = expand_str(r#"key = "k", tenant = none, retry(tries = 3)"#, WELCOME).unwrap_err();
        assert!(
            err.starts_with("`retry(..)` takes no argument `tries`")
                && err.contains("`attempts`, `backoff`, `delay`, `max_delay`, `jitter`")
                && err.ends_with("(X_JOB_DECLARATION_INVALID)"),
            "{err}"
        );
        let err = expand_str(
            r#"key = "k", tenant = none, queue = "a", queue = "b""#,
            WELCOME,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "`queue` is given twice in `#[job]`: keep one (X_JOB_DECLARATION_INVALID)"
        );
        // A value that does not read is not also a missing argument.
        let err = expand_str(r#"key = 5, tenant = none"#, WELCOME).unwrap_err();
        assert!(err.starts_with("`key` takes a template string"), "{err}");
        assert!(!err.contains("X_IDEMPOTENCY_REQUIRED"), "{err}");
    }

    #[test]
    fn keyed_concurrency_needs_a_limit() {
        let err = expand_str(
            r#"key = "k", tenant = none, concurrency(key = "{org_id}", when_busy = later)"#,
            WELCOME,
        )
        .unwrap_err();
        assert!(err.contains("needs a `limit`"), "{err}");
        assert!(err.contains("unknown `when_busy` value `later`"), "{err}");
    }

    #[test]
    fn duplicate_step_names() {
        let err = expand_str(
            r#"key = "k", tenant = none"#,
            r#"async fn pay(run: Run, input: Order) -> Result<(), JobError> {
                run.step("charge", async { Ok(1) }).await?;
                run.step("ship", async { Ok(2) }).await?;
                run.step("charge", async { Ok(3) }).await?;
                Ok(())
            }"#,
        )
        .unwrap_err();
        assert!(
            err.starts_with("step name `charge` is used twice on one path through this job"),
            "{err}"
        );
        assert!(err.ends_with("(X_STEP_DUPLICATE)"), "{err}");
    }

    #[test]
    fn type_text_reads_like_source() {
        let ty: Type = syn::parse_str("::std::vec::Vec<crate::Welcome>").unwrap();
        assert_eq!(type_text(&ty), "::std::vec::Vec<crate::Welcome>");
        let ty: Type = syn::parse_str("(u64, &'static str)").unwrap();
        assert_eq!(type_text(&ty), "(u64, &'static str)");
    }
}
