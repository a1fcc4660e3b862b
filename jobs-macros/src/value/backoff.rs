//! `backoff = fixed | linear | exponential`.

use syn::Expr;

use super::Value;

/// The retry delay curve, as the runtime's `Backoff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// Every delay is the base delay.
    Fixed,
    /// `delay * attempt`.
    Linear,
    /// `delay * 2^(attempt - 1)`.
    Exponential,
}

impl Value for Backoff {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        super::choice(
            expr,
            "backoff",
            &[
                ("fixed", Backoff::Fixed),
                ("linear", Backoff::Linear),
                ("exponential", Backoff::Exponential),
            ],
        )
    }
}

impl Backoff {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            Backoff::Fixed => "Fixed",
            Backoff::Linear => "Linear",
            Backoff::Exponential => "Exponential",
        }
    }
}
