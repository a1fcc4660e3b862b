//! `tenant = none | per_tenant` on `#[backfill]` and `#[ledger]`: who a pass or a posting
//! belongs to. Unlike `#[job]`, the input is the runtime's own type, so the choice is a word.

use syn::Expr;

use super::{lit_str, shown, word, Value};

/// The tenant decision of a factory attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `tenant = none`.
    None,
    /// `tenant = per_tenant`.
    PerTenant,
}

impl Scope {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            Scope::None => "None",
            Scope::PerTenant => "PerTenant",
        }
    }
}

impl Value for Scope {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        let found = match (word(expr), lit_str(expr)) {
            (Some(ident), _) => ident.to_string(),
            (None, Some(lit)) => lit.value(),
            _ => shown(expr),
        };
        match found.as_str() {
            "none" => Ok(Scope::None),
            "per_tenant" | "per-tenant" => Ok(Scope::PerTenant),
            _ => Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`tenant` takes `none` (one scope over every tenant) or `per_tenant` \
                     (each pass or posting names its tenant), found `{found}` \
                     (X_JOB_TENANT_REQUIRED)"
                ),
            )),
        }
    }
}
