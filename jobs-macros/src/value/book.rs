//! `book = driver | path::to::fn`: where a ledger writes its lines.

use syn::{Expr, Path};

use super::{shown, word, Value};

/// A ledger's book.
#[derive(Debug, Clone)]
pub enum Book {
    /// `book = driver`: the run's driver's own book.
    Driver,
    /// `book = path`: a `fn(&Run) -> Result<Arc<dyn LedgerBook>, JobError>`.
    Fn(Path),
}

impl Value for Book {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        if word(expr).is_some_and(|w| w == "driver") {
            return Ok(Book::Driver);
        }
        match expr {
            Expr::Path(path) if path.qself.is_none() => Ok(Book::Fn(path.path.clone())),
            _ => Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`book` takes `driver` (the driver's own book) or the path of a \
                     `fn(&Run) -> Result<Arc<dyn LedgerBook>, JobError>`, found `{}` \
                     (X_JOB_DECLARATION_INVALID)",
                    shown(expr)
                ),
            )),
        }
    }
}

impl Book {
    /// As the manifest shows it.
    pub fn text(&self) -> String {
        match self {
            Book::Driver => "driver".to_string(),
            Book::Fn(path) => quote::ToTokens::to_token_stream(path)
                .to_string()
                .replace(' ', ""),
        }
    }
}
