//! Cross-site request forgery: a double-submit token. The first page a browser loads sets a
//! random token in a `SameSite=Strict`, `HttpOnly` cookie; every form carries the same token in
//! a hidden field; a change is accepted only when both are present and equal, and when the
//! request's `Origin` (if sent) is the dashboard's own host. A page of another site can neither
//! read the cookie nor make the browser send it.

use axum::http::{header, HeaderMap};
use rand::Rng;

use crate::error::{ErrorCode, JobError};

/// The cookie (and form field) holding the token.
pub(crate) const COOKIE: &str = "jobs_dashboard_csrf";
/// The form field.
pub(crate) const FIELD: &str = "csrf";

/// A new token: 32 random bytes, hex.
pub(crate) fn new_token() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `Set-Cookie` value for `token`, scoped to the mount path.
pub(crate) fn cookie(token: &str, base: &str) -> String {
    let path = if base.is_empty() { "/" } else { base };
    format!("{COOKIE}={token}; Path={path}; HttpOnly; SameSite=Strict")
}

/// The token the request's cookie carries, when it is one this module wrote.
pub(crate) fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_string())
        .filter(|value| value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Refuses a change whose origin is foreign or whose form token does not match the cookie's.
pub(crate) fn check(
    headers: &HeaderMap,
    cookie: Option<&str>,
    form: &[u8],
) -> Result<(), JobError> {
    let refused = |why: &str| {
        JobError::new(
            ErrorCode::DashboardCsrf,
            format!("the change was refused: {why}"),
        )
    };
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
    let cookie = cookie.ok_or_else(|| refused("the browser sent no CSRF cookie"))?;
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
    fn only_a_matching_token_from_our_own_origin_passes() {
        let token = new_token();
        let form = format!("{FIELD}={token}&action=retry");
        let own = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
        ]);
        assert!(check(&own, Some(&token), form.as_bytes()).is_ok());
        // No Origin at all (a script, not a browser): the token still decides.
        assert!(check(&HeaderMap::new(), Some(&token), form.as_bytes()).is_ok());
        let proxied = headers(&[
            ("host", "10.0.0.5:8080"),
            ("x-forwarded-host", "jobs.example.com"),
            ("origin", "https://jobs.example.com"),
        ]);
        assert!(check(&proxied, Some(&token), form.as_bytes()).is_ok());
        let foreign = headers(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ]);
        let refusals = [
            check(&foreign, Some(&token), form.as_bytes()),
            check(&own, None, form.as_bytes()),
            check(&own, Some(&new_token()), form.as_bytes()),
            check(&own, Some(&token), b"action=retry"),
            check(
                &headers(&[("sec-fetch-site", "cross-site")]),
                Some(&token),
                form.as_bytes(),
            ),
        ];
        for refused in refusals {
            let e = refused.unwrap_err();
            assert_eq!(e.code(), Some(ErrorCode::DashboardCsrf));
            assert!(!e.message().contains(&token), "the token never shows");
        }
    }

    #[test]
    fn the_cookie_is_strict_and_read_back() {
        let token = new_token();
        assert_eq!(token.len(), 64);
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
