//! `tz = "Europe/Paris"`: an IANA zone from the tz database the runtime is built with
//! (`chrono-tz`), seed-inventory §12 and §30 item 16. A near miss names the zone meant:
//! `"Bogota"` -> `America/Bogota`, `"Europe/Pariss"` -> `Europe/Paris`.

use std::str::FromStr;

use chrono_tz::{Tz, TZ_VARIANTS};
use syn::Expr;

use super::{lit_str, shown};

/// A checked IANA zone name.
#[derive(Debug, Clone)]
pub struct TzValue {
    /// The zone's canonical name (`Europe/Paris`).
    pub name: String,
}

/// At most this many zones are suggested at once.
const MAX_SUGGESTIONS: usize = 3;

/// Parses `tz = ".."`.
pub fn parse(expr: &Expr) -> syn::Result<TzValue> {
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
    if let Ok(tz) = Tz::from_str(&text) {
        return Ok(TzValue {
            name: tz.name().to_owned(),
        });
    }
    let advice = match suggestions(&text).as_slice() {
        [] => "use an IANA zone name such as `Europe/Paris`, `America/Bogota` or `UTC`".to_owned(),
        names => {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            format!("did you mean {}?", crate::args::list(&names))
        }
    };
    Err(syn::Error::new_spanned(
        lit,
        format!("`{text}` is not an IANA time zone: {advice} (X_INVARIANT)"),
    ))
}

/// The zones `text` probably means: the same name in another case; else every zone whose
/// city (last path segment) it names (`Bogota`, `new york`); else the closest names by edit
/// distance, when close enough to be a typo.
fn suggestions(text: &str) -> Vec<String> {
    let wanted = fold(text);
    if wanted.is_empty() {
        return Vec::new();
    }
    let names = || TZ_VARIANTS.iter().map(|tz| tz.name());

    if let Some(same) = names().find(|name| fold(name) == wanted) {
        return vec![same.to_owned()];
    }
    let wanted_city = wanted.rsplit('/').next().unwrap_or(&wanted).to_owned();
    let by_city: Vec<String> = names()
        .filter(|name| city(name) == wanted_city)
        .map(str::to_owned)
        .take(MAX_SUGGESTIONS)
        .collect();
    if !by_city.is_empty() {
        return by_city;
    }

    // A typo: the whole name, or only the city when no area was written.
    let budget = (wanted.chars().count() / 4).clamp(1, 3);
    let mut scored: Vec<(usize, &str)> = names()
        .map(|name| {
            let whole = levenshtein(&fold(name), &wanted);
            let distance = if wanted.contains('/') {
                whole
            } else {
                whole.min(levenshtein(&city(name), &wanted))
            };
            (distance, name)
        })
        .filter(|(distance, _)| *distance <= budget)
        .collect();
    scored.sort();
    let best = scored.first().map(|(distance, _)| *distance);
    scored
        .into_iter()
        .take_while(|(distance, _)| Some(*distance) == best)
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name.to_owned())
        .collect()
}

/// Lower case, spaces as underscores: how zone names are compared.
fn fold(name: &str) -> String {
    name.trim().to_lowercase().replace(' ', "_")
}

/// The city of a zone name, folded: `America/Argentina/Buenos_Aires` -> `buenos_aires`.
fn city(name: &str) -> String {
    fold(name.rsplit('/').next().unwrap_or(name))
}

/// The edit distance between `a` and `b` (insertions, deletions, substitutions).
fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("paris", "paris"), 0);
    }

    #[test]
    fn near_misses_name_the_zone() {
        assert_eq!(suggestions("Bogota"), ["America/Bogota"]);
        assert_eq!(suggestions("Europe/Pariss"), ["Europe/Paris"]);
        assert_eq!(suggestions("europe/paris"), ["Europe/Paris"]);
        assert_eq!(suggestions("New York"), ["America/New_York"]);
        assert_eq!(suggestions("Bogata"), ["America/Bogota"]);
        assert!(suggestions("Nowhere at all").is_empty());
    }
}
