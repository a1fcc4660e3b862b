//! Cross-site request forgery: a signed double-submit token. The first page a browser loads
//! sets a token in a `SameSite=Strict`, `HttpOnly` cookie; every form carries the same token in
//! a hidden field. The token is a random nonce and the HMAC-SHA256 of that nonce and the
//! viewer's identity under the dashboard's secret, so only this dashboard can make one: a
//! change is accepted only when the cookie's token is one it signed for this viewer, the form's
//! token is the same, and the request's `Origin` (if sent) is the dashboard's own host. A page
//! of another site can neither read the cookie nor make the browser send it, and a script that
//! makes up a matching cookie and field is refused whatever `Origin` it sends.

use axum::http::{header, HeaderMap};
use hmac::{Hmac, KeyInit, Mac};
use rand::Rng;
use sha2::Sha256;

use crate::error::{ErrorCode, JobError};

/// The cookie (and form field) holding the token.
pub(crate) const COOKIE: &str = "jobs_dashboard_csrf";
/// The form field.
pub(crate) const FIELD: &str = "csrf";

/// Hex digits of the nonce and of the signature.
const NONCE_HEX: usize = 32;
const MAC_HEX: usize = 64;

/// What to do when a token is refused.
const FIX: &str = "reload the dashboard page, then submit the form again";

type HmacSha256 = Hmac<Sha256>;

/// Signs and checks tokens under the dashboard's secret.
pub(crate) struct Signer {
    key: Vec<u8>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key never shows.
        f.write_str("Signer(..)")
    }
}

impl Signer {
    /// A signer over `secret`, or over 32 random bytes (tokens then last as long as the
    /// process: a restart asks each browser to reload).
    pub(crate) fn new(secret: Option<&[u8]>) -> Signer {
        let key = match secret {
            Some(secret) => secret.to_vec(),
            None => rand::rng().random::<[u8; 32]>().to_vec(),
        };
        Signer { key }
    }

    fn mac(&self, nonce: &str, identity: &str) -> String {
        // HMAC takes a key of any length, so this never fails.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("hmac accepts keys of every length"));
        mac.update(b"jobs-dashboard-csrf:v1:");
        mac.update(nonce.as_bytes());
        mac.update(b":");
        mac.update(identity.as_bytes());
        hex(&mac.finalize().into_bytes())
    }

    /// A new token for `identity`: `<nonce>.<signature>`, hex.
    pub(crate) fn issue(&self, identity: &str) -> String {
        let nonce = hex(&rand::rng().random::<[u8; 16]>());
        let mac = self.mac(&nonce, identity);
        format!("{nonce}.{mac}")
    }

    /// Whether `token` is one this signer issued for `identity`.
    pub(crate) fn verify(&self, token: &str, identity: &str) -> bool {
        let Some((nonce, mac)) = token.split_once('.') else {
            return false;
        };
        well_formed(token) && same(self.mac(nonce, identity).as_bytes(), mac.as_bytes())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<32 hex>.<64 hex>`.
fn well_formed(token: &str) -> bool {
    token.split_once('.').is_some_and(|(nonce, mac)| {
        nonce.len() == NONCE_HEX
            && mac.len() == MAC_HEX
            && nonce
                .bytes()
                .chain(mac.bytes())
                .all(|b| b.is_ascii_hexdigit())
    })
}

/// The `Set-Cookie` value for `token`, scoped to the mount path.
pub(crate) fn cookie(token: &str, base: &str) -> String {
    let path = if base.is_empty() { "/" } else { base };
    format!("{COOKIE}={token}; Path={path}; HttpOnly; SameSite=Strict")
}

/// The token the request's cookie carries, when it has the shape of one this module writes
/// (whether it was signed here is [`Signer::verify`]'s question).
pub(crate) fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|value| well_formed(value))
}

fn refused(why: &str) -> JobError {
    JobError::new(
        ErrorCode::DashboardCsrf,
        format!("the change was refused: {why}"),
    )
    .with_fix(FIX.to_string())
}

/// Refuses a change whose origin is foreign, whose cookie carries no token this dashboard
/// signed for the viewer (`signed`: the cookie's token once verified; `sent_cookie`: whether
/// the browser sent one at all), or whose form token is not that token.
pub(crate) fn check(
    headers: &HeaderMap,
    signed: Option<&str>,
    sent_cookie: bool,
    form: &[u8],
) -> Result<(), JobError> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://").map(|(_, rest)| rest));
        // Behind a reverse proxy the browser's host arrives as `X-Forwarded-Host`.
        let hosts = [header::HOST.as_str(), "x-forwarded-host"];
        let ours = hosts.iter().any(|name| {
            let host = headers.get(*name).and_then(|h| h.to_str().ok());
            host.is_some() && host == origin_host
        });
        if !ours {
            return Err(refused("it comes from another origin"));
        }
    }
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site == "cross-site")
    {
        return Err(refused("it comes from another site"));
    }
    let cookie = signed.ok_or_else(|| {
        refused(if sent_cookie {
            "the CSRF cookie was not signed by this dashboard for this viewer"
        } else {
            "the browser sent no CSRF cookie"
        })
    })?;
    let sent = form_urlencoded_field(form, FIELD)
        .ok_or_else(|| refused("the form carries no CSRF token"))?;
    if !same(sent.as_bytes(), cookie.as_bytes()) {
        return Err(refused("the form's CSRF token does not match its cookie"));
    }
    Ok(())
}

fn form_urlencoded_field(form: &[u8], name: &str) -> Option<String> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(form).ok()?;
    pairs.into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

/// Equal in time independent of where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, HeaderValue::from_static(v));
        }
        map
    }

    #[test]
    fn only_a_signed_matching_token_from_our_own_origin_passes() {
        let signer = Signer::new(None);
        let token = signer.issue("ops");
        assert!(signer.verify(&token, "ops"));
        let form = format!("{FIELD}={token}&action=retry");
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(check(&own, Some(&token), true, form.as_bytes()).is_ok());
        // No Origin at all (a script, not a browser): the signed token still decides.
        assert!(check(&HeaderMap::new(), Some(&token), true, form.as_bytes()).is_ok());
        let proxied = headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "jobs.example.com"),
            ("origin", "https://jobs.example.com"),
        ]);
        assert!(check(&proxied, Some(&token), true, form.as_bytes()).is_ok());
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        let refusals = [
            check(&foreign, Some(&token), true, form.as_bytes()),
            check(&own, None, false, form.as_bytes()),
            check(&own, None, true, form.as_bytes()),
            check(&own, Some(&signer.issue("ops")), true, form.as_bytes()),
            check(&own, Some(&token), true, b"action=retry"),
            check(
                &headers(&[("sec-fetch-site", "cross-site")]),
                Some(&token),
                true,
                form.as_bytes(),
            ),
        ];
        for refused in refusals {
            let e = refused.unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::DashboardCsrf));
            assert!(!e.message().contains(&token), "the token never shows");
            assert!(e.fix().is_some());
        }
    }

    #[test]
    fn a_made_up_or_foreign_token_does_not_verify() {
        let signer = Signer::new(None);
        let made_up = format!("{}.{}", "a".repeat(NONCE_HEX), "b".repeat(MAC_HEX));
        assert!(!signer.verify(&made_up, "ops"));
        assert!(!signer.verify(&"0".repeat(64), "ops"));
        // Another viewer's token, and another dashboard's.
        assert!(!signer.verify(&signer.issue("intern"), "ops"));
        assert!(!Signer::new(None).verify(&signer.issue("ops"), "ops"));
        // A configured secret signs the same on every instance.
        let a = Signer::new(Some(b"shared secret"));
        let b = Signer::new(Some(b"shared secret"));
        assert!(b.verify(&a.issue("ops"), "ops"));
        assert_eq!(format!("{a:?}"), "Signer(..)");
    }

    #[test]
    fn the_cookie_is_strict_and_read_back() {
        let token = Signer::new(None).issue("ops");
        assert_eq!(token.len(), NONCE_HEX + 1 + MAC_HEX);
        let set = cookie(&token, "/admin");
        assert!(
            set.contains("HttpOnly")
                && set.contains("SameSite=Strict")
                && set.contains("Path=/admin")
        );
        let sent = headers(&[("cookie", "a=b")]);
        assert_eq!(cookie_token(&sent), None);
        let mut sent = HeaderMap::new();
        sent.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("a=b; {COOKIE}={token}")).unwrap(),
        );
        assert_eq!(cookie_token(&sent), Some(token));
    }
}
