//! Literal durations in a body, `run.sleep("3d")` and `run.wait_for_event(event, key, "1h")`,
//! read at compile time by the declaration's own duration rule (§30 item 9): zero, negative
//! and unreadable ones are refused at the literal, with the declaration's message and code.
//!
//! Only string literals are decided here; a computed duration is checked when the call runs
//! (`X_INVARIANT`, naming the call). The calls are found by method name and arity, whatever
//! the receiver is called, since a body may clone the run or name it otherwise.

use syn::visit::Visit;
use syn::{Block, Expr, ExprMethodCall, Item};

use crate::errors::Errors;
use crate::value::{duration, lit_str};

/// The body calls that take a duration: method, arity, which argument, what to do instead of
/// a zero one.
const CALLS: &[(&str, usize, usize, &str, &str)] = &[
    (
        "sleep",
        1,
        0,
        "run.sleep",
        "leave the `run.sleep` out to go on at once",
    ),
    (
        "wait_for_event",
        3,
        2,
        "run.wait_for_event",
        "a zero timeout gives up before any event can arrive; wait at least \"1s\"",
    ),
];

/// Reports every literal duration in `body` that the declaration would refuse.
pub fn literal_durations_are_valid(errs: &mut Errors, body: &Block) {
    let mut calls = DurationCalls { errs };
    calls.visit_block(body);
}

struct DurationCalls<'e> {
    errs: &'e mut Errors,
}

impl<'ast> Visit<'ast> for DurationCalls<'_> {
    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        let found = CALLS
            .iter()
            .find(|(method, arity, ..)| call.method == method && call.args.len() == *arity);
        if let Some((_, _, at, name, when_zero)) = found {
            let arg: &Expr = &call.args[*at];
            if lit_str(arg).is_some() {
                self.errs.handle(duration::parse(arg, name, when_zero));
            }
        }
        syn::visit::visit_expr_method_call(self, call);
    }

    // A fn, impl or module nested in the body is not this job's body.
    fn visit_item(&mut self, _: &'ast Item) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> Vec<String> {
        let block: Block = syn::parse_str(body).unwrap();
        let mut errs = Errors::new();
        literal_durations_are_valid(&mut errs, &block);
        match errs.finish() {
            Ok(()) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn literal_durations_are_read_like_the_declaration_s() {
        assert!(refused(
            r#"{ run.sleep("3d").await?; run.wait_for_event::<u8>("paid", &key, "1h 30m").await?; }"#
        )
        .is_empty());
        let errors = refused(
            r#"{ run.sleep("3 fortnights").await?; run.sleep("0s").await?;
                 let r = run.clone(); r.wait_for_event::<u8>("paid", "k", "-5s").await?; }"#,
        );
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].starts_with("invalid duration `3 fortnights` for `run.sleep`: expected"),
            "{}",
            errors[0]
        );
        assert!(errors[1].contains("it must be greater than zero; leave the `run.sleep` out"));
        assert!(errors[2].starts_with("invalid duration `-5s` for `run.wait_for_event`"));
        assert!(errors
            .iter()
            .all(|e| e.ends_with("(X_JOB_DECLARATION_INVALID)")));
    }

    #[test]
    fn computed_durations_and_other_calls_are_left_to_the_runtime() {
        assert!(refused(
            r#"{ run.sleep(&input.every).await?; run.sleep(Duration::ZERO).await?;
                 thread::sleep("0s"); run.wait_for_event::<u8>("e", "k").await?; }"#
        )
        .is_empty());
    }
}
