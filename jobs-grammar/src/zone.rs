//! IANA time zones from the tz database `chrono-tz` carries (seed-inventory §12, §30 item 16).
//!
//! A name that is not a zone is refused with the zones it probably means, found one way for
//! the macros and the runtime alike: the same name in another case (`europe/paris`); else every
//! zone whose city it names (`Bogota` -> `America/Bogota`, `new york` -> `America/New_York`);
//! else the closest names by edit distance, when close enough to be a typo
//! (`Europe/Pariss` -> `Europe/Paris`).

use std::fmt;
use std::str::FromStr;

pub use chrono_tz::Tz;
use chrono_tz::TZ_VARIANTS;

/// At most this many zones are suggested at once.
pub const MAX_SUGGESTIONS: usize = 3;

/// What to write when nothing close was found.
pub const EXAMPLES: &str = "an IANA zone name such as `Europe/Paris`, `America/Bogota` or `UTC`";

/// A name that is not an IANA zone, and the zones it probably means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneError {
    suggestions: Vec<&'static str>,
}

impl ZoneError {
    /// The zones the name probably means, best first (at most [`MAX_SUGGESTIONS`]); empty when
    /// none is close.
    pub fn suggestions(&self) -> &[&'static str] {
        &self.suggestions
    }

    /// What to write instead: `` use `America/Bogota` `` or, with nothing close, "use an IANA
    /// zone name such as ...".
    pub fn fix(&self) -> String {
        match self.suggestions.as_slice() {
            [] => format!("use {EXAMPLES}"),
            names => format!("use {}", crate::or_list(names)),
        }
    }
}

impl fmt::Display for ZoneError {
    /// "not an IANA time zone: did you mean `America/Bogota`?" (or the examples).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.suggestions.as_slice() {
            [] => write!(f, "not an IANA time zone: use {EXAMPLES}"),
            names => write!(
                f,
                "not an IANA time zone: did you mean {}?",
                crate::or_list(names)
            ),
        }
    }
}

impl std::error::Error for ZoneError {}

/// The zone named `text` exactly (`Europe/Paris`), or the zones it probably means.
pub fn parse_zone(text: &str) -> Result<Tz, ZoneError> {
    Tz::from_str(text).map_err(|_| ZoneError {
        suggestions: suggest_zones(text),
    })
}

/// The zones `text` probably means, best first, at most [`MAX_SUGGESTIONS`] (see the module
/// documentation for the order of the tries).
pub fn suggest_zones(text: &str) -> Vec<&'static str> {
    let wanted = fold(text);
    if wanted.is_empty() {
        return Vec::new();
    }
    let names = || TZ_VARIANTS.iter().map(|tz| tz.name());

    if let Some(same) = names().find(|name| fold(name) == wanted) {
        return vec![same];
    }
    let wanted_city = wanted.rsplit('/').next().unwrap_or(&wanted).to_owned();
    let by_city: Vec<&'static str> = names()
        .filter(|name| city(name) == wanted_city)
        .take(MAX_SUGGESTIONS)
        .collect();
    if !by_city.is_empty() {
        return by_city;
    }

    // A typo: in the whole name, or only in the city when no area was written.
    let budget = (wanted.chars().count() / 4).clamp(1, 3);
    let mut scored: Vec<(usize, &'static str)> = names()
        .map(|name| {
            let whole = strsim::levenshtein(&fold(name), &wanted);
            let distance = if wanted.contains('/') {
                whole
            } else {
                whole.min(strsim::levenshtein(&city(name), &wanted))
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
        .map(|(_, name)| name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zones_are_read_by_their_exact_name() {
        assert_eq!(parse_zone("Europe/Paris").unwrap(), Tz::Europe__Paris);
        assert_eq!(parse_zone("UTC").unwrap(), Tz::UTC);
        assert!(parse_zone("europe/paris").is_err());
    }

    #[test]
    fn near_misses_name_the_zone() {
        assert_eq!(suggest_zones("Bogota"), ["America/Bogota"]);
        assert_eq!(suggest_zones("Europe/Pariss"), ["Europe/Paris"]);
        assert_eq!(suggest_zones("europe/paris"), ["Europe/Paris"]);
        assert_eq!(suggest_zones("New York"), ["America/New_York"]);
        assert_eq!(suggest_zones("Bogata"), ["America/Bogota"]);
        assert!(suggest_zones("Nowhere at all").is_empty());
        assert!(suggest_zones("  ").is_empty());
    }

    #[test]
    fn the_error_says_what_to_write() {
        let bogota = parse_zone("Bogota").unwrap_err();
        assert_eq!(bogota.fix(), "use `America/Bogota`");
        assert_eq!(
            bogota.to_string(),
            "not an IANA time zone: did you mean `America/Bogota`?"
        );
        let nowhere = parse_zone("Nowhere at all").unwrap_err();
        assert!(nowhere.suggestions().is_empty());
        assert_eq!(nowhere.fix(), format!("use {EXAMPLES}"));
    }
}
