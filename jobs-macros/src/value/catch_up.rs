//! `catch_up = skip | run_once | run_all`, or the seed's spellings `"skip"`, `"run-once"`,
//! `"run-all"` (seed-inventory §12 `catchUp`, §30 item 18).

use syn::Expr;

use super::{lit_str, shown, word, Value};

/// What the scheduler does about occurrences missed while no scheduler led, as the runtime's
/// `CatchUp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// Fire only the latest missed occurrence.
    Skip,
    /// Fire the earliest missed occurrence once.
    RunOnce,
    /// Fire every missed occurrence, `max_catch_up` per round.
    RunAll,
}

const POLICIES: &[(&str, CatchUp)] = &[
    ("skip", CatchUp::Skip),
    ("run_once", CatchUp::RunOnce),
    ("run_all", CatchUp::RunAll),
];

impl Value for CatchUp {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        let found = match (word(expr), lit_str(expr)) {
            (Some(ident), _) => ident.to_string(),
            (None, Some(lit)) => lit.value(),
            (None, None) => shown(expr),
        };
        // "run-once" is the seed's spelling.
        let wanted = found.replace('-', "_");
        if let Some((_, policy)) = POLICIES.iter().find(|(name, _)| *name == wanted) {
            return Ok(*policy);
        }
        let names: Vec<&str> = POLICIES.iter().map(|(name, _)| *name).collect();
        // `runOnce`, `RunAll`: the right policy in another spelling.
        let squashed = wanted.replace('_', "").to_lowercase();
        let hint = match POLICIES
            .iter()
            .find(|(name, _)| name.replace('_', "") == squashed)
        {
            Some((name, _)) => format!("did you mean `{name}`?"),
            None => format!("expected {}", super::list(&names)),
        };
        Err(syn::Error::new_spanned(
            expr,
            format!("unknown catch-up policy `{found}`; {hint} (X_JOB_DECLARATION_INVALID)"),
        ))
    }
}

impl CatchUp {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            CatchUp::Skip => "Skip",
            CatchUp::RunOnce => "RunOnce",
            CatchUp::RunAll => "RunAll",
        }
    }
}
