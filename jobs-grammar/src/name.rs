//! The grammar of the names the job system stores and matches on: job, task and queue names,
//! and tenants. The macros apply it to a literal (`name = "..."`, `queue = "..."`) and the
//! runtime to the same value at enqueue, so a name the build accepts is never refused later,
//! and one the runtime would refuse never compiles.
//!
//! - A **name** (job, task, queue) is 1 to [`MAX_NAME_BYTES`] bytes of ASCII letters, digits,
//!   `_`, `-` and `.`, starting with a letter, a digit or `_`: `send_welcome`,
//!   `billing.send-invoice`, `email`. It is an identifier read in logs, URLs, lease keys
//!   (`job:<name>`) and shell commands, so it holds no space, no `:` or `/` (the separators of
//!   the keys built from it) and nothing a terminal or a page would interpret.
//! - A **tenant** is an id the app chose (an org id, a uuid, an email): 1 to
//!   [`MAX_TENANT_BYTES`] bytes, not blank, with no control character. Its content is the
//!   app's, so anything printable passes.
//!
//! ```
//! use jobs_grammar::name::{check_name, check_tenant, InvalidName};
//!
//! assert!(check_name("billing.send-invoice").is_ok());
//! assert_eq!(
//!     check_name("Bad Queue!").unwrap_err(),
//!     InvalidName::Character { found: ' ', at: 3 }
//! );
//! assert!(check_tenant("org_42").is_ok());
//! assert_eq!(check_tenant("").unwrap_err(), InvalidName::Empty);
//! ```

use std::fmt;

/// The longest job, task or queue name, in bytes.
pub const MAX_NAME_BYTES: usize = 200;

/// The longest tenant, in bytes of UTF-8.
pub const MAX_TENANT_BYTES: usize = 256;

/// What the grammar accepts in a name, for messages.
pub const NAME_GRAMMAR: &str =
    "1 to 200 bytes of ASCII letters, digits, `_`, `-` and `.`, starting with a letter, a digit or `_`";

/// What the grammar accepts in a tenant, for messages.
pub const TENANT_GRAMMAR: &str = "1 to 256 bytes, not blank, with no control character";

/// Why a name or a tenant is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidName {
    /// Nothing, or only whitespace (a tenant).
    Empty,
    /// Longer than its limit, in bytes.
    TooLong {
        /// Its length in bytes.
        bytes: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A character the grammar does not allow, at this byte offset.
    Character {
        /// The character.
        found: char,
        /// Its byte offset.
        at: usize,
    },
}

impl InvalidName {
    /// Whether the refusal is the length alone (the runtime reports it as a limit).
    pub fn is_too_long(&self) -> bool {
        matches!(self, InvalidName::TooLong { .. })
    }
}

impl fmt::Display for InvalidName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidName::Empty => f.write_str("is empty"),
            InvalidName::TooLong { bytes, limit } => {
                write!(f, "is {bytes} bytes, over the limit of {limit} bytes")
            }
            InvalidName::Character { found: ' ', at } => write!(f, "holds a space at byte {at}"),
            InvalidName::Character { found, at } if found.is_control() || found.is_whitespace() => {
                write!(f, "holds `{}` at byte {at}", found.escape_default())
            }
            InvalidName::Character { found, at } => write!(f, "holds `{found}` at byte {at}"),
        }
    }
}

impl std::error::Error for InvalidName {}

/// Checks a job, task or queue name against the grammar (see the module's documentation).
pub fn check_name(name: &str) -> Result<(), InvalidName> {
    if name.is_empty() {
        return Err(InvalidName::Empty);
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(InvalidName::TooLong {
            bytes: name.len(),
            limit: MAX_NAME_BYTES,
        });
    }
    for (at, c) in name.char_indices() {
        let allowed = c.is_ascii_alphanumeric() || c == '_' || (at > 0 && (c == '-' || c == '.'));
        if !allowed {
            return Err(InvalidName::Character { found: c, at });
        }
    }
    Ok(())
}

/// Checks a tenant against the grammar (see the module's documentation).
pub fn check_tenant(tenant: &str) -> Result<(), InvalidName> {
    if tenant.trim().is_empty() {
        return Err(InvalidName::Empty);
    }
    if tenant.len() > MAX_TENANT_BYTES {
        return Err(InvalidName::TooLong {
            bytes: tenant.len(),
            limit: MAX_TENANT_BYTES,
        });
    }
    match tenant.char_indices().find(|(_, c)| c.is_control()) {
        Some((at, found)) => Err(InvalidName::Character { found, at }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_ascii_identifiers_with_dots_and_dashes() {
        for good in [
            "send_welcome",
            "billing.send-invoice",
            "email",
            "_private",
            "v2",
            "2fa.reset",
            &"a".repeat(MAX_NAME_BYTES),
        ] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        assert_eq!(check_name(""), Err(InvalidName::Empty));
        assert_eq!(
            check_name(&"a".repeat(201)),
            Err(InvalidName::TooLong {
                bytes: 201,
                limit: 200
            })
        );
        for (bad, found, at) in [
            ("Bad Queue!", ' ', 3),
            ("bad!", '!', 3),
            ("a:b", ':', 1),
            ("a/b", '/', 1),
            ("-lead", '-', 0),
            (".lead", '.', 0),
            ("é", 'é', 0),
            ("tab\there", '\t', 3),
            ("nul\0", '\0', 3),
        ] {
            assert_eq!(
                check_name(bad),
                Err(InvalidName::Character { found, at }),
                "{bad}"
            );
        }
        assert_eq!(
            check_name("Bad Queue!").unwrap_err().to_string(),
            "holds a space at byte 3"
        );
        assert_eq!(
            check_name("tab\there").unwrap_err().to_string(),
            "holds `\\t` at byte 3"
        );
        assert_eq!(
            check_name("bad!").unwrap_err().to_string(),
            "holds `!` at byte 3"
        );
    }

    #[test]
    fn tenants_are_any_printable_id() {
        for good in ["acme", "org_42", "a@b.example", "Ünïcode org", "<b>"] {
            assert_eq!(check_tenant(good), Ok(()), "{good}");
        }
        assert_eq!(check_tenant(""), Err(InvalidName::Empty));
        assert_eq!(check_tenant("  "), Err(InvalidName::Empty));
        assert!(check_tenant(&"t".repeat(257)).unwrap_err().is_too_long());
        assert_eq!(
            check_tenant("a\nb"),
            Err(InvalidName::Character { found: '\n', at: 1 })
        );
    }
}
