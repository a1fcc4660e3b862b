//! A step's output owns its data (X_STEP_OUTPUT_UNSERIALIZABLE).
//!
//! A step's output is stored, and a later attempt reads it back instead of running the step,
//! so it must deserialize into a value that borrows from nothing: `String`, not `&str`. rustc
//! says only "implementation of `Deserialize` is not general enough" about a borrowed output.
//! This rule refuses, with the owned type to write, the borrowed outputs the tokens show:
//!
//! - the step's `async` block ends in `Ok("text")`, `Ok(b"bytes")` or `Ok(&value)`, or in
//!   `Ok::<&str, _>(..)`;
//! - `run.step::<&str, _, _>(..)`;
//! - `let x: &str = run.step(..).await?`.
//!
//! A borrowed output the tokens do not show (a helper fn returning `&'static str`) is left to
//! rustc's message.

use quote::ToTokens;
use syn::visit::Visit;
use syn::{
    Block, Expr, ExprCall, ExprLit, ExprMethodCall, GenericArgument, Item, Lit, Local, Pat, Stmt,
    Type,
};

use crate::errors::Errors;
use crate::value::lit_str;

/// Reports every step in `body` whose output is visibly borrowed.
pub fn step_outputs_are_owned(errs: &mut Errors, body: &Block) {
    let mut outputs = StepOutputs { errs };
    outputs.visit_block(body);
}

struct StepOutputs<'e> {
    errs: &'e mut Errors,
}

impl StepOutputs<'_> {
    fn refuse(&mut self, call: &ExprMethodCall, at: impl ToTokens, found: &str, owned: &str) {
        let step = match call.args.first().and_then(lit_str) {
            Some(name) => format!("step `{}`", name.value()),
            None => "this step".to_owned(),
        };
        self.errs.spanned(
            at,
            format!(
                "{step} returns {found}, a borrowed value: a step's output is stored and a \
                 later attempt reads it back instead of running the step, so it must own its \
                 data; return {owned} (X_STEP_OUTPUT_UNSERIALIZABLE)"
            ),
        );
    }

    /// `Ok(..)` at the end of the step's `async` block.
    fn check_work(&mut self, call: &ExprMethodCall, work: &Expr) {
        let Expr::Async(work) = work else {
            return;
        };
        let Some(Stmt::Expr(tail, None)) = work.block.stmts.last() else {
            return;
        };
        let Expr::Call(ExprCall { func, args, .. }) = tail else {
            return;
        };
        let Expr::Path(func) = &**func else {
            return;
        };
        let Some(ok) = func.path.segments.last().filter(|s| s.ident == "Ok") else {
            return;
        };
        if let Some(ty) = first_type_argument(&ok.arguments) {
            if let Some(owned) = owned_for(ty) {
                let found = format!("`{}`", spaced(ty));
                return self.refuse(call, ty, &found, &owned);
            }
        }
        let [value] = args.iter().collect::<Vec<_>>()[..] else {
            return;
        };
        match value {
            Expr::Lit(ExprLit {
                lit: Lit::Str(_), ..
            }) => self.refuse(
                call,
                value,
                "a string literal (`&'static str`)",
                "`String`: `Ok(\"..\".to_string())`, and `String` where the output is named",
            ),
            Expr::Lit(ExprLit {
                lit: Lit::ByteStr(_),
                ..
            }) => self.refuse(
                call,
                value,
                "a byte string literal (`&'static [u8]`)",
                "`Vec<u8>`: `Ok(b\"..\".to_vec())`",
            ),
            Expr::Reference(_) => self.refuse(
                call,
                value,
                "a reference",
                "the value itself: drop the `&`, and clone the value if it is still needed",
            ),
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for StepOutputs<'_> {
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        if call.method == "step" && call.args.len() == 2 {
            let turbofish = call
                .turbofish
                .as_ref()
                .and_then(|t| t.args.first())
                .and_then(|arg| match arg {
                    GenericArgument::Type(ty) => Some(ty),
                    _ => None,
                });
            match turbofish.and_then(|ty| owned_for(ty).map(|owned| (ty, owned))) {
                Some((ty, owned)) => {
                    let found = format!("`{}`", spaced(ty));
                    self.refuse(call, ty, &found, &owned);
                }
                None => self.check_work(call, &call.args[1]),
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_local(&mut self, local: &'ast Local) {
        if let (Pat::Type(typed), Some(init)) = (&local.pat, &local.init) {
            if let Some(call) = step_call(&init.expr) {
                if let Some(owned) = owned_for(&typed.ty) {
                    let found = format!("`{}`", spaced(&typed.ty));
                    self.refuse(call, &typed.ty, &found, &owned);
                }
            }
        }
        syn::visit::visit_local(self, local);
    }

    // A fn, impl or module nested in the body is not this job's body.
    fn visit_item(&mut self, _: &'ast Item) {}
}

/// The `run.step(..)` call under `.await` and `?`, if `expr` is one.
fn step_call(expr: &Expr) -> Option<&ExprMethodCall> {
    match expr {
        Expr::Try(e) => step_call(&e.expr),
        Expr::Await(e) => step_call(&e.base),
        Expr::Paren(e) => step_call(&e.expr),
        Expr::MethodCall(call) if call.method == "step" && call.args.len() == 2 => Some(call),
        _ => None,
    }
}

fn first_type_argument(arguments: &syn::PathArguments) -> Option<&Type> {
    let syn::PathArguments::AngleBracketed(args) = arguments else {
        return None;
    };
    args.args.iter().find_map(|arg| match arg {
        GenericArgument::Type(ty) => Some(ty),
        _ => None,
    })
}

/// The owned type to write instead of `ty`, when `ty` is a reference.
fn owned_for(ty: &Type) -> Option<String> {
    let Type::Reference(reference) = ty else {
        return None;
    };
    let owned = match &*reference.elem {
        Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        Type::Path(path) if path.path.is_ident("Path") => "PathBuf".to_owned(),
        Type::Slice(slice) => format!("Vec<{}>", spaced(&slice.elem)),
        elem => spaced(elem),
    };
    Some(format!("`{owned}`"))
}

/// A type as written, for a message.
fn spaced(ty: &Type) -> String {
    crate::expand::job::type_text(ty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> Vec<String> {
        let block: Block = syn::parse_str(body).unwrap();
        let mut errs = Errors::new();
        step_outputs_are_owned(&mut errs, &block);
        match errs.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn visibly_borrowed_outputs_are_refused_with_the_owned_type() {
        let errors = refused(
            r#"{
                run.step("greet", async { Ok("hello") }).await?;
                run.step("bytes", async move { Ok::<_, JobError>(b"raw") }).await?;
                run.step("typed", async { Ok::<&[u64], JobError>(&[1]) }).await?;
                run.step::<&str, _, _>("fish", work()).await?;
                let name: &str = run.step("bound", fetch()).await?;
                run.step("ref", async { Ok(&input.name) }).await?;
            }"#,
        );
        assert_eq!(errors.len(), 6, "{errors:#?}");
        assert!(errors[0].starts_with("step `greet` returns a string literal"));
        assert!(errors[0].contains("return `String`"));
        assert!(errors[1].contains("return `Vec<u8>`"));
        assert!(errors[2].contains("returns `&[u64]`") && errors[2].contains("`Vec<u64>`"));
        assert!(errors[3].contains("returns `&str`") && errors[3].contains("`String`"));
        assert!(errors[4].starts_with("step `bound` returns `&str`"));
        assert!(errors[5].contains("drop the `&`"));
        assert!(errors
            .iter()
            .all(|e| e.ends_with("(X_STEP_OUTPUT_UNSERIALIZABLE)")));
    }

    #[test]
    fn owned_outputs_pass() {
        assert!(refused(
            r#"{
                run.step("greet", async { Ok::<_, JobError>("hello".to_string()) }).await?;
                let n: u64 = run.step("count", count()).await?;
                let s: String = run.step("name", async { Ok(input.name.clone()) }).await?;
                run.step("unit", async { Ok(()) }).await?;
            }"#
        )
        .is_empty());
    }
}
