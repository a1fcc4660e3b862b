//! §30 item 11: literal step names are unique within one body (X_STEP_DUPLICATE).
//!
//! A step's stored output is found by its name, so two `run.step("charge", ..)` calls in one
//! run would replay each other's output. This is a best-effort lint over literals: a name
//! built at run time is checked by the runtime, with the same code.

use std::collections::HashSet;

use crate::errors::Errors;
use syn::visit::Visit;
use syn::{Block, Expr, ExprLit, ExprMethodCall, Item, Lit, LitStr};

/// Reports the second and later uses of each literal step name in `body`.
pub fn step_names_are_unique(errs: &mut Errors, body: &Block) {
    let mut steps = StepNames::default();
    steps.visit_block(body);
    for lit in steps.duplicates {
        errs.spanned(
            &lit,
            format!(
                "step name `{}` is used twice in this job; step names must be unique within a \
                 run (X_STEP_DUPLICATE)",
                lit.value()
            ),
        );
    }
}

/// Collects `.step("literal", ..)` calls in source order.
#[derive(Default)]
struct StepNames {
    seen: HashSet<String>,
    duplicates: Vec<LitStr>,
}

impl<'ast> Visit<'ast> for StepNames {
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        // The receiver first: in `run.step("a", ..).await?.step("b", ..)`, "a" comes first.
        self.visit_expr(&call.receiver);
        if call.method == "step" {
            if let Some(Expr::Lit(ExprLit {
                lit: Lit::Str(name),
                ..
            })) = call.args.first()
            {
                if !self.seen.insert(name.value()) {
                    self.duplicates.push(name.clone());
                }
            }
        }
        for arg in &call.args {
            self.visit_expr(arg);
        }
    }

    // A fn, impl or module nested in the body is another scope, not this job's steps.
    fn visit_item(&mut self, _: &'ast Item) {}
}
