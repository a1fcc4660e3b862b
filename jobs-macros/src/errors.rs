//! The error sink of one expansion.
//!
//! Every stage records problems here and carries on, so a declaration's errors are reported
//! together. Each error keeps the user's tokens it is about, first to last, so rustc underlines
//! the whole argument (`priority = 1`, `&Welcome`), not just its first token. Like serde's
//! `Ctxt` (and darling's accumulator), dropping the sink without calling [`Errors::finish`]
//! panics, so no code path can lose an error.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

use crate::value::Arg;

/// Errors recorded so far.
pub struct Errors {
    errors: Option<Vec<syn::Error>>,
}

impl Errors {
    /// An empty sink.
    pub fn new() -> Self {
        Errors {
            errors: Some(Vec::new()),
        }
    }

    /// Records `message` against the user's tokens `node`.
    pub fn spanned(&mut self, node: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(node, message));
    }

    /// Records `message` at `span`.
    pub fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// Records an error (which may carry several).
    pub fn push(&mut self, error: syn::Error) {
        self.errors
            .as_mut()
            .expect("Errors used after finish()")
            .push(error);
    }

    /// The value of `result`, or `None` after recording its error.
    pub fn handle<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.push(error)).ok()
    }

    /// The value of an argument that was given and read; one that did not read has its
    /// refusal recorded, once per call.
    pub fn value<T: Clone>(&mut self, arg: &Option<Arg<T>>) -> Option<T> {
        self.arg(arg.as_ref()?)
    }

    /// The tokens of an argument as written, if it read (checked here, where the user wrote
    /// it, and passed on as written to the attribute this one expands to); else its refusal
    /// is recorded.
    pub fn written<'a, T: Clone>(&mut self, arg: &'a Option<Arg<T>>) -> Option<&'a syn::Expr> {
        let arg = arg.as_ref()?;
        self.arg(arg).map(|_| arg.tokens())
    }

    /// The value of an argument, if it read; else its refusal is recorded.
    pub fn arg<T: Clone>(&mut self, arg: &Arg<T>) -> Option<T> {
        if let Some(error) = arg.err() {
            self.push(error.clone());
        }
        arg.ok().cloned()
    }

    /// `Ok` when nothing was recorded, else one error carrying every error, in order.
    pub fn finish(mut self) -> syn::Result<()> {
        let errors = self.errors.take().expect("finish() called twice");
        let mut errors = errors.into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                first.extend(errors);
                Err(first)
            }
        }
    }
}

impl Drop for Errors {
    fn drop(&mut self) {
        if self.errors.is_some() && !std::thread::panicking() {
            panic!("Errors dropped without calling finish()");
        }
    }
}
