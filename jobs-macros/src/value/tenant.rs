//! `tenant = <field>`, `tenant = none` or `tenant = <callable>` (seed-inventory §2 `tenant`).

use syn::{Expr, Ident};

use super::key::callable;
use super::{lit_str, shown, word, Value};

/// How the run's tenant is derived from the input.
#[derive(Debug, Clone)]
pub enum Tenant {
    /// `tenant = none`: the run belongs to no tenant.
    None,
    /// `tenant = org_id`: a field of the input.
    Field(Ident),
    /// `tenant = <callable>`: computed from `&Input`.
    Derived(Expr),
}

impl Value for Tenant {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        if let Some(ident) = word(expr) {
            return match ident.to_string().as_str() {
                "none" => Ok(Tenant::None),
                "None" => Err(syn::Error::new_spanned(
                    expr,
                    "write `tenant = none` (lower-case) for a job that belongs to no tenant \
                     (X_JOB_TENANT_REQUIRED)",
                )),
                _ => Ok(Tenant::Field(ident.clone())),
            };
        }
        if let Some(lit) = lit_str(expr) {
            let text = lit.value();
            let fix = if syn::parse_str::<Ident>(&text).is_ok() {
                format!("write `tenant = {text}` without quotes")
            } else {
                "write `tenant = <field of the input>` or `tenant = none`".to_owned()
            };
            return Err(syn::Error::new_spanned(
                expr,
                format!("`tenant` takes a field of the input, not a string: {fix} (X_JOB_TENANT_REQUIRED)"),
            ));
        }
        if callable(expr) {
            return Ok(Tenant::Derived(expr.clone()));
        }
        Err(syn::Error::new_spanned(
            expr,
            format!(
                "`tenant` takes a field of the input (`tenant = org_id`), `none`, or a closure \
                 over the input, found `{}` (X_JOB_TENANT_REQUIRED)",
                shown(expr)
            ),
        ))
    }
}
