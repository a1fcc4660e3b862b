//! `jitter = full | equal | none`.

use syn::Expr;

use super::Value;

/// How much of each retry delay is random, as the runtime's `Jitter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Anywhere between zero and the delay.
    Full,
    /// Half fixed, half random.
    Equal,
    /// Exactly the delay.
    None,
}

impl Value for Jitter {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        super::choice(
            expr,
            "jitter",
            &[
                ("full", Jitter::Full),
                ("equal", Jitter::Equal),
                ("none", Jitter::None),
            ],
        )
    }
}

impl Jitter {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            Jitter::Full => "Full",
            Jitter::Equal => "Equal",
            Jitter::None => "None",
        }
    }
}
