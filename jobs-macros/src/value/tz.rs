//! `tz = "Europe/Paris"`: an IANA zone from the tz database the runtime is built with, read and
//! suggested by the rule the runtime uses (`jobs_grammar::zone`), seed-inventory §12 and §30
//! item 16. A near miss names the zone meant: `"Bogota"` -> `America/Bogota`,
//! `"Europe/Pariss"` -> `Europe/Paris`.

use jobs_grammar::zone::parse_zone;
use syn::Expr;

use super::{lit_str, shown, Value};

/// A checked IANA zone name.
#[derive(Debug, Clone)]
pub struct TzValue {
    /// The zone's canonical name (`Europe/Paris`).
    pub name: String,
}

impl Value for TzValue {
    fn parse(expr: &Expr, _arg: &str) -> syn::Result<Self> {
        parse(expr)
    }
}

/// Reads `tz = ".."`.
fn parse(expr: &Expr) -> syn::Result<TzValue> {
    let Some(lit) = lit_str(expr) else {
        return Err(syn::Error::new_spanned(
            expr,
            format!(
                "`tz` takes an IANA zone name as a string, found `{}`: write \
                 `tz = \"Europe/Paris\"` (X_INVARIANT)",
                shown(expr)
            ),
        ));
    };
    let text = lit.value();
    match parse_zone(&text) {
        Ok(tz) => Ok(TzValue {
            name: tz.name().to_owned(),
        }),
        Err(err) => Err(syn::Error::new_spanned(
            lit,
            format!("`{text}` is {err} (X_INVARIANT)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, String> {
        let expr: Expr = syn::parse_str(&format!("{text:?}")).unwrap();
        parse(&expr).map(|tz| tz.name).map_err(|e| e.to_string())
    }

    #[test]
    fn zones_and_near_misses() {
        assert_eq!(check("Europe/Paris").as_deref(), Ok("Europe/Paris"));
        assert_eq!(
            check("Bogota").unwrap_err(),
            "`Bogota` is not an IANA time zone: did you mean `America/Bogota`? (X_INVARIANT)"
        );
        assert_eq!(
            check("Nowhere at all").unwrap_err(),
            "`Nowhere at all` is not an IANA time zone: use an IANA zone name such as \
             `Europe/Paris`, `America/Bogota` or `UTC` (X_INVARIANT)"
        );
    }
}
