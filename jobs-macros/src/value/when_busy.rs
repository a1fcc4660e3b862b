//! `when_busy = wait | fail`.

use syn::Expr;

use super::Value;

/// What a keyed run does when its key is busy, as the runtime's `WhenBusy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenBusy {
    /// Stay ready and try again later.
    Wait,
    /// Settle `failed` with `X_JOB_KEY_BUSY`.
    Fail,
}

impl Value for WhenBusy {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        super::choice(
            expr,
            "`when_busy` value",
            &[("wait", WhenBusy::Wait), ("fail", WhenBusy::Fail)],
        )
    }
}

impl WhenBusy {
    /// The runtime's variant name.
    pub fn variant(self) -> &'static str {
        match self {
            WhenBusy::Wait => "Wait",
            WhenBusy::Fail => "Fail",
        }
    }
}
