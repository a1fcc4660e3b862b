//! `jitter = full | equal | none`.

use syn::Expr;

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

impl Jitter {
    /// Parses `jitter = ..`.
    pub fn parse(expr: &Expr) -> syn::Result<Self> {
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

    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            Jitter::Full => "Full",
            Jitter::Equal => "Equal",
            Jitter::None => "None",
        }
    }
}
