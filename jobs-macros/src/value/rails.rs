//! A backfill's rails: `requires = "20261201093000_add_display_name"` (the app migration its
//! pass needs) and `environments = ["staging", "production"]` (where its pass runs).

use std::collections::BTreeSet;

use syn::{Expr, ExprArray};

use super::text::Text;
use super::{lit_str, Value};

/// `requires = ".."`: an app migration, named by its sqlx version (the leading digits) and an
/// optional `_description`, in the name grammar.
#[derive(Debug, Clone)]
pub struct MigrationId(pub String);

impl Value for MigrationId {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        let Text(id) = Text::parse(expr, arg)?;
        let digits = id.chars().take_while(char::is_ascii_digit).count();
        let rest = &id[digits..];
        if digits == 0 || digits > 18 || !(rest.is_empty() || rest.starts_with('_')) {
            return Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`{arg}` names an app migration by its sqlx version, the digits its file \
                     name starts with, then an optional `_description`: e.g. `{arg} = \
                     \"20261201093000_add_display_name\"` (X_JOB_DECLARATION_INVALID)"
                ),
            ));
        }
        Ok(MigrationId(id))
    }
}

/// `environments = ["staging", ..]`: one or more distinct names in the name grammar.
#[derive(Debug, Clone)]
pub struct Environments(pub Vec<String>);

impl Value for Environments {
    fn parse(expr: &Expr, arg: &str) -> syn::Result<Self> {
        let shape = || {
            syn::Error::new_spanned(
                expr,
                format!(
                    "`{arg}` takes a list of environment names: e.g. `{arg} = [\"staging\", \
                     \"production\"]` (X_JOB_DECLARATION_INVALID)"
                ),
            )
        };
        let Expr::Array(ExprArray { elems, .. }) = expr else {
            return Err(shape());
        };
        if elems.is_empty() {
            return Err(syn::Error::new_spanned(
                expr,
                format!(
                    "`{arg}` cannot be empty: a pass that runs nowhere never runs; name at \
                     least one environment, or leave `{arg}` out to run in every one \
                     (X_JOB_DECLARATION_INVALID)"
                ),
            ));
        }
        let mut seen = BTreeSet::new();
        let mut names = Vec::with_capacity(elems.len());
        for elem in elems {
            if lit_str(elem).is_none() {
                return Err(shape());
            }
            let Text(name) = Text::parse(elem, arg)?;
            if !seen.insert(name.clone()) {
                return Err(syn::Error::new_spanned(
                    elem,
                    format!("`{arg}` names `{name}` twice: keep one (X_JOB_DECLARATION_INVALID)"),
                ));
            }
            names.push(name);
        }
        Ok(Environments(names))
    }
}
