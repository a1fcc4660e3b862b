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

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;
use syn::{
    Block, Expr, ExprCall, ExprLit, ExprMethodCall, GenericArgument, Item, ItemFn, Lit, Local, Pat,
    Stmt, Type,
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
    fn refuse(&mut self, call: &ExprMethodCall, finding: Finding) {
        let step = match call.args.first().and_then(lit_str) {
            Some(name) => format!("step `{}`", name.value()),
            None => "this step".to_owned(),
        };
        let Finding { at, found, owned } = finding;
        self.errs.spanned(
            at,
            format!(
                "{step} returns {found}, a borrowed value: a step's output is stored and a \
                 later attempt reads it back instead of running the step, so it must own its \
                 data; return {owned} (X_STEP_OUTPUT_UNSERIALIZABLE)"
            ),
        );
    }
}

impl<'ast> Visit<'ast> for StepOutputs<'_> {
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        if let Some(finding) = borrowed_output(call) {
            self.refuse(call, finding);
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    fn visit_local(&mut self, local: &'ast Local) {
        if let Some((call, finding)) = borrowed_binding(local) {
            self.refuse(call, finding);
        }
        syn::visit::visit_local(self, local);
    }

    // A fn, impl or module nested in the body is not this job's body.
    fn visit_item(&mut self, _: &'ast Item) {}
}

/// `item` with every step refused here replaced by `refused_step(&run, name, work)`: the same
/// types without the `DeserializeOwned` bound, so a refused job adds no "not general enough"
/// of rustc's to the macro's error. `refused_step` is the path of that fn. Answers whether
/// anything was replaced.
pub fn without_borrowed_steps(item: &mut ItemFn, refused_step: &TokenStream) -> bool {
    let mut unborrow = Unborrow {
        refused_step,
        replaced: false,
    };
    unborrow.visit_block_mut(&mut item.block);
    unborrow.replaced
}

struct Unborrow<'a> {
    refused_step: &'a TokenStream,
    replaced: bool,
}

impl Unborrow<'_> {
    fn stand_in(&mut self, call: &ExprMethodCall) -> Expr {
        self.replaced = true;
        let refused_step = self.refused_step;
        let receiver = &call.receiver;
        let turbofish = &call.turbofish;
        let args = &call.args;
        syn::parse_quote!(#refused_step #turbofish (&#receiver, #args))
    }

    /// Replaces the step call under `.await` and `?` in `expr`.
    fn replace_step_call(&mut self, expr: &mut Expr) {
        match expr {
            Expr::Try(e) => self.replace_step_call(&mut e.expr),
            Expr::Await(e) => self.replace_step_call(&mut e.base),
            Expr::Paren(e) => self.replace_step_call(&mut e.expr),
            Expr::MethodCall(call) => *expr = self.stand_in(call),
            _ => {}
        }
    }
}

impl VisitMut for Unborrow<'_> {
    fn visit_local_mut(&mut self, local: &mut Local) {
        syn::visit_mut::visit_local_mut(self, local);
        if borrowed_binding(local).is_some() {
            if let Some(init) = &mut local.init {
                self.replace_step_call(&mut init.expr);
            }
        }
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        syn::visit_mut::visit_expr_mut(self, expr);
        if let Expr::MethodCall(call) = expr {
            if borrowed_output(call).is_some() {
                *expr = self.stand_in(call);
            }
        }
    }

    fn visit_item_mut(&mut self, _: &mut Item) {}
}

/// A borrowed output, where the tokens show it.
struct Finding {
    /// The tokens to blame.
    at: TokenStream,
    /// What was found, for the message.
    found: String,
    /// The owned type to write instead.
    owned: String,
}

/// A `run.step(..)` whose turbofish or `async` block shows a borrowed output.
fn borrowed_output(call: &ExprMethodCall) -> Option<Finding> {
    if call.method != "step" || call.args.len() != 2 {
        return None;
    }
    let turbofish = call
        .turbofish
        .as_ref()
        .and_then(|t| t.args.first())
        .and_then(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        });
    if let Some(ty) = turbofish {
        return reference(ty);
    }
    borrowed_tail(&call.args[1])
}

/// `let x: &str = run.step(..).await?`.
fn borrowed_binding(local: &Local) -> Option<(&ExprMethodCall, Finding)> {
    let (Pat::Type(typed), Some(init)) = (&local.pat, &local.init) else {
        return None;
    };
    let call = step_call(&init.expr)?;
    reference(&typed.ty).map(|finding| (call, finding))
}

/// `Ok(..)` at the end of the step's `async` block.
fn borrowed_tail(work: &Expr) -> Option<Finding> {
    let Expr::Async(work) = work else {
        return None;
    };
    let Some(Stmt::Expr(Expr::Call(ExprCall { func, args, .. }), None)) = work.block.stmts.last()
    else {
        return None;
    };
    let Expr::Path(func) = &**func else {
        return None;
    };
    let ok = func.path.segments.last().filter(|s| s.ident == "Ok")?;
    if let Some(ty) = first_type_argument(&ok.arguments) {
        if let Some(finding) = reference(ty) {
            return Some(finding);
        }
    }
    let [value] = args.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let (found, owned) = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(_), ..
        }) => (
            "a string literal (`&'static str`)",
            "`String`: `Ok(\"..\".to_string())`, and `String` where the output is named",
        ),
        Expr::Lit(ExprLit {
            lit: Lit::ByteStr(_),
            ..
        }) => (
            "a byte string literal (`&'static [u8]`)",
            "`Vec<u8>`: `Ok(b\"..\".to_vec())`",
        ),
        Expr::Reference(_) => (
            "a reference",
            "the value itself: drop the `&`, and clone the value if it is still needed",
        ),
        _ => return None,
    };
    Some(Finding {
        at: value.to_token_stream(),
        found: found.to_owned(),
        owned: owned.to_owned(),
    })
}

/// A finding for `ty` when it is a reference type.
fn reference(ty: &Type) -> Option<Finding> {
    owned_for(ty).map(|owned| Finding {
        at: ty.to_token_stream(),
        found: format!("`{}`", spaced(ty)),
        owned,
    })
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
    use quote::quote;

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

    #[test]
    fn a_refused_job_keeps_its_steps_without_the_bound() {
        let mut item: ItemFn = syn::parse_str(
            r#"async fn f(run: Run, input: I) -> Result<(), JobError> {
                let a = run.step("greet", async { Ok("hello") }).await?;
                let b: &str = run.step("name", fetch()).await?;
                run.step::<&str, _, _>("fish", work()).await?;
                run.step("fine", async { Ok(1u8) }).await?;
                Ok(())
            }"#,
        )
        .unwrap();
        assert!(without_borrowed_steps(&mut item, &quote!(refused_step)));
        let out = item.to_token_stream().to_string();
        for expected in [
            r#"let a = refused_step (& run , "greet" , async { Ok ("hello") }) . await ?"#,
            r#"let b : & str = refused_step (& run , "name" , fetch ()) . await ?"#,
            r#"refused_step :: < & str , _ , _ > (& run , "fish" , work ()) . await ?"#,
            r#"run . step ("fine" , async { Ok (1u8) }) . await ?"#,
        ] {
            assert!(out.contains(expected), "missing `{expected}` in {out}");
        }
    }
}
