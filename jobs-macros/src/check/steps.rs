//! §30 item 11: a literal step name is used once on any path through one body
//! (X_STEP_DUPLICATE).
//!
//! A step's stored output is found by its name, so two `run.step("charge", ..)` calls on one
//! path would replay each other's output. The arms of an `if`/`else` and of a `match` exclude
//! each other, so a name may repeat across them: a run takes one arm. (As everywhere in a
//! durable body, the condition must be decided by the input or earlier steps' outputs, so a
//! later attempt takes the same arm.) This is a best-effort lint over literals: a name built
//! at run time, or a literal repeated by a loop, is checked by the runtime, with the same code.

use std::collections::BTreeSet;

use crate::errors::Errors;
use syn::visit::Visit;
use syn::{Block, Expr, ExprIf, ExprMatch, ExprMethodCall, Item, LitStr};

/// Reports each literal step name used a second time on one path through `body`.
pub fn step_names_are_unique(errs: &mut Errors, body: &Block) {
    let mut steps = StepNames::default();
    steps.visit_block(body);
    for lit in steps.duplicates {
        let name = lit.value();
        errs.spanned(
            &lit,
            format!(
                "step name `{name}` is used twice on one path through this job: the second \
                 step would get the first one's stored output instead of running; give it its \
                 own name, e.g. `\"{name}-2\"` (a name may repeat only in arms that exclude \
                 each other, such as the two arms of an `if`/`else` or of a `match`) \
                 (X_STEP_DUPLICATE)"
            ),
        );
    }
}

/// Walks a body in execution order, keeping the literal step names a run may already have
/// passed at each point.
#[derive(Default)]
struct StepNames {
    seen: BTreeSet<String>,
    duplicates: Vec<LitStr>,
}

impl StepNames {
    /// Walks each of `arms` from the same starting point; afterwards a run may have passed
    /// the names of any one arm.
    fn exclusive<'ast>(&mut self, arms: impl IntoIterator<Item = Arm<'ast>>) {
        let before = self.seen.clone();
        let mut after = before.clone();
        for arm in arms {
            self.seen = before.clone();
            match arm {
                Arm::Block(block) => self.visit_block(block),
                Arm::Expr(expr) => self.visit_expr(expr),
                Arm::Guarded(guard, body) => {
                    self.visit_expr(guard);
                    self.visit_expr(body);
                }
            }
            after.append(&mut self.seen);
        }
        self.seen = after;
    }
}

/// One arm of a branch.
enum Arm<'ast> {
    Block(&'ast Block),
    Expr(&'ast Expr),
    Guarded(&'ast Expr, &'ast Expr),
}

impl<'ast> Visit<'ast> for StepNames {
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        // The receiver first: in `run.step("a", ..).await?.step("b", ..)`, "a" comes first.
        self.visit_expr(&call.receiver);
        if call.method == "step" {
            if let Some(name) = call.args.first().and_then(crate::value::lit_str) {
                if !self.seen.insert(name.value()) {
                    self.duplicates.push(name.clone());
                }
            }
        }
        for arg in &call.args {
            self.visit_expr(arg);
        }
    }

    fn visit_expr_if(&mut self, expr: &'ast ExprIf) {
        self.visit_expr(&expr.cond);
        let mut arms = vec![Arm::Block(&expr.then_branch)];
        if let Some((_, otherwise)) = &expr.else_branch {
            arms.push(Arm::Expr(otherwise));
        }
        self.exclusive(arms);
    }

    fn visit_expr_match(&mut self, expr: &'ast ExprMatch) {
        self.visit_expr(&expr.expr);
        self.exclusive(expr.arms.iter().map(|arm| match &arm.guard {
            Some((_, guard)) => Arm::Guarded(guard, &arm.body),
            None => Arm::Expr(&arm.body),
        }));
    }

    // A fn, impl or module nested in the body is another scope, not this job's steps.
    fn visit_item(&mut self, _: &'ast Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicates(body: &str) -> Vec<String> {
        let block: Block = syn::parse_str(body).unwrap();
        let mut steps = StepNames::default();
        steps.visit_block(&block);
        steps.duplicates.iter().map(LitStr::value).collect()
    }

    #[test]
    fn one_path_refuses_a_repeat() {
        assert_eq!(
            duplicates(
                r#"{ run.step("a", x).await?; run.step("b", y).await?; run.step("a", z); }"#
            ),
            ["a"]
        );
    }

    #[test]
    fn exclusive_arms_may_share_a_name() {
        assert!(duplicates(
            r#"{ if c { run.step("a", x).await?; } else { run.step("a", y).await?; } }"#
        )
        .is_empty());
        assert!(duplicates(
            r#"{ match m { A => run.step("a", x), B if g => run.step("a", y), _ => run.step("a", z) }; }"#
        )
        .is_empty());
        assert!(duplicates(
            r#"{ if c { run.step("a", x) } else if d { run.step("a", y) } else { run.step("a", z) }; }"#
        )
        .is_empty());
    }

    #[test]
    fn a_name_after_the_branch_repeats_either_arm() {
        assert_eq!(
            duplicates(
                r#"{ if c { run.step("a", x).await?; } else { run.step("b", y).await?; }
                     run.step("b", z).await?; run.step("a", w).await?; }"#
            ),
            ["b", "a"]
        );
        // Before the branch, then inside an arm.
        assert_eq!(
            duplicates(r#"{ run.step("a", x); if c { run.step("a", y); } }"#),
            ["a"]
        );
        // Twice inside one arm.
        assert_eq!(
            duplicates(r#"{ match m { A => { run.step("a", x); run.step("a", y); } _ => {} } }"#),
            ["a"]
        );
    }
}
