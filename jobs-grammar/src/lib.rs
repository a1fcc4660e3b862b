//! The value grammar of the `jobs` crate, written once and shared by its attribute macros and
//! its runtime, so a literal the macros accept and the same text read from configuration at
//! run time are judged by one rule:
//!
//! - [`cron`]: the 5-field cron dialect (no seconds, no `@` aliases), a matcher that says which
//!   wall-clock minutes a cron selects, and its translation for the evaluator the runtime uses;
//! - [`zone`]: IANA time zones, and the zones a near miss probably means;
//! - [`duration`]: durations written as text (`"30s"`, `"1h 30m"`): positive, whole milliseconds;
//! - [`currency`]: the ISO 4217 currency codes a posting may use;
//! - [`name`]: job, task and queue names, and tenants.
//!
//! Each parser answers a typed error whose `Display` says why in words; the macros and the
//! runtime wrap it in their own message, code and fix.
//!
//! ```
//! use jobs_grammar::cron::Cron;
//!
//! let cron = Cron::parse("0 9 * * 1-5").unwrap();
//! assert_eq!(cron.as_str(), "0 9 * * 1-5");
//! assert_eq!(
//!     jobs_grammar::zone::parse_zone("Bogota").unwrap_err().suggestions(),
//!     ["America/Bogota"]
//! );
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cron;
pub mod currency;
pub mod duration;
pub mod name;
pub mod zone;

/// `names` quoted and joined for a message: `` `a` ``, `` `a` or `b` ``, `` `a`, `b` or `c` ``.
pub fn or_list<S: AsRef<str>>(names: &[S]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{}`", n.as_ref())).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn or_list_joins_like_a_sentence() {
        assert_eq!(super::or_list::<&str>(&[]), "");
        assert_eq!(super::or_list(&["a"]), "`a`");
        assert_eq!(super::or_list(&["a", "b"]), "`a` or `b`");
        assert_eq!(super::or_list(&["a", "b", "c"]), "`a`, `b` or `c`");
    }
}
