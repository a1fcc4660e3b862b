//! `on_dependency_failure = cancel | run_anyway`.

use syn::Expr;

use super::Value;

/// What a dependent does when a job it depends on fails, as the runtime's `DependencyFailure`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DependencyFailure {
    /// It is cancelled with `X_JOB_DEPENDENCY_FAILED` (the default).
    Cancel,
    /// It runs anyway once every dependency has ended.
    RunAnyway,
}

impl Value for DependencyFailure {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        super::choice(
            expr,
            "`on_dependency_failure` value",
            &[
                ("cancel", DependencyFailure::Cancel),
                ("run_anyway", DependencyFailure::RunAnyway),
            ],
        )
    }
}

impl DependencyFailure {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            DependencyFailure::Cancel => "Cancel",
            DependencyFailure::RunAnyway => "RunAnyway",
        }
    }
}
