//! Where a webhook may be sent: the URL's scheme, and the addresses its host resolves to.
//!
//! The address check runs inside the HTTP client's DNS resolver ([`FilteringResolver`]), so it
//! applies to the addresses the connection is actually made to: a host that resolves to a
//! public address when checked and to 127.0.0.1 when connected (DNS rebinding) is still refused.

use std::fmt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::Url;

use crate::error::{ErrorCode, JobError};

/// Resolves a host name to addresses. The default is the system's resolver; a test can put a
/// stub here to answer a name with any address without sending anything to it.
pub trait HostResolver: Send + Sync + fmt::Debug + 'static {
    /// The addresses of `host`.
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo` through tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl HostResolver for SystemResolver {
    fn resolve(&self, host: &str) -> BoxFuture<'static, std::io::Result<Vec<IpAddr>>> {
        let host = host.to_string();
        Box::pin(async move {
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?;
            Ok(addrs.map(|a| a.ip()).collect())
        })
    }
}

/// Whether `ip` is an address a webhook must not reach without `allow_private`: loopback,
/// private, shared (CGNAT), link-local (which holds the cloud metadata address
/// 169.254.169.254), unspecified, broadcast, multicast, or an IPv6 form of one of them.
pub fn is_private_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_private_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // fc00::/7: unique local (holds fd00:ec2::254, a metadata address).
                || (first & 0xfe00) == 0xfc00
                // fe80::/10: link-local.
                || (first & 0xffc0) == 0xfe80
                // 64:ff9b::/96 NAT64 of a private IPv4 address.
                || (v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
                    && is_private_v4(Ipv4Addr::from(
                        (u32::from(v6.segments()[6]) << 16) | u32::from(v6.segments()[7]),
                    )))
                || v6 == Ipv6Addr::UNSPECIFIED
        }
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        // 0.0.0.0/8 reaches this host on some systems.
        || a == 0
        // 100.64.0.0/10: shared address space (holds 100.100.100.200, a metadata address).
        || (a == 100 && (64..128).contains(&b))
}

/// The URL as errors show it: origin and path, never the query, fragment or credentials.
pub fn redact_url(url: &Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

/// The URL text as errors show it, when it does not even parse: nothing of it.
fn unparsable() -> JobError {
    JobError::new(
        ErrorCode::WebhookEndpointInvalid,
        "the webhook endpoint's URL does not parse",
    )
}

/// Checks an endpoint URL: it parses, its scheme is http or https, it is https outside
/// development, and a literal address or a `localhost` name in it is not private unless
/// `allow_private` (`X_WEBHOOK_ENDPOINT_INVALID`). Other names are checked when they resolve.
pub fn check_endpoint_url(
    url: &str,
    development: bool,
    allow_private: bool,
) -> Result<Url, JobError> {
    let parsed = Url::parse(url).map_err(|_| unparsable())?;
    let shown = redact_url(&parsed);
    match parsed.scheme() {
        "https" => {}
        "http" if development => {}
        "http" => {
            return Err(JobError::new(
                ErrorCode::WebhookEndpointInvalid,
                format!("the webhook endpoint {shown} is http://; outside development only https:// is sent to"),
            ))
        }
        other => {
            return Err(JobError::new(
                ErrorCode::WebhookEndpointInvalid,
                format!("the webhook endpoint's scheme `{other}` is not http or https"),
            ))
        }
    }
    let Some(host) = parsed.host_str() else {
        return Err(JobError::new(
            ErrorCode::WebhookEndpointInvalid,
            format!("the webhook endpoint {shown} names no host"),
        ));
    };
    // An IPv6 literal is bracketed in a URL; an IPv4 one is normalised by the parser.
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    // A literal address never passes through the resolver, so it is checked here; so is a
    // loopback name, however it is spelled, so that its refusal does not depend on what the
    // system resolver makes of it.
    let private = match literal {
        Some(ip) => is_private_address(ip),
        None => is_loopback_name(host),
    };
    if private && !allow_private {
        return Err(private_refused(&shown));
    }
    Ok(parsed)
}

/// Whether `host` is a name that always means this machine: `localhost` or a name under it
/// (RFC 6761 section 6.3), in any case, with or without the root's trailing dot.
fn is_loopback_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost")
}

pub(crate) fn private_refused(shown: &str) -> JobError {
    JobError::new(
        ErrorCode::WebhookEndpointInvalid,
        format!(
            "the webhook endpoint {shown} resolves to a loopback, private, link-local or metadata address; refused without `allow_private`"
        ),
    )
}

/// The resolver's refusal, found again in the client's error chain.
#[derive(Debug)]
pub(crate) struct PrivateAddressRefused;

impl fmt::Display for PrivateAddressRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("every address of the host is loopback, private, link-local or metadata")
    }
}

impl std::error::Error for PrivateAddressRefused {}

/// The HTTP client's resolver: asks `inner`, then drops every private address unless
/// `allow_private`. With none left the connection fails before a socket opens.
#[derive(Debug, Clone)]
pub(crate) struct FilteringResolver {
    pub(crate) inner: Arc<dyn HostResolver>,
    pub(crate) allow_private: bool,
}

type Resolving = Pin<
    Box<
        dyn Future<Output = Result<reqwest::dns::Addrs, Box<dyn std::error::Error + Send + Sync>>>
            + Send,
    >,
>;

impl reqwest::dns::Resolve for FilteringResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> Resolving {
        let lookup = self.inner.resolve(name.as_str());
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs = lookup.await?;
            let kept: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|ip| allow_private || !is_private_address(*ip))
                // The port is replaced by the URL's when connecting.
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if kept.is_empty() {
                return Err(
                    Box::new(PrivateAddressRefused) as Box<dyn std::error::Error + Send + Sync>
                );
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_ranges_are_recognised_and_public_ones_are_not() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.100.100.200",
            "0.0.0.0",
            "::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(is_private_address(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "2606:2800:220:1::1", "172.32.0.1"] {
            assert!(!is_private_address(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn urls_are_checked_and_redacted() {
        let e = check_endpoint_url("ftp://example.com/x", true, false).unwrap_err();
        assert!(e.is(ErrorCode::WebhookEndpointInvalid));
        let e = check_endpoint_url("http://example.com/x", false, false).unwrap_err();
        assert!(e.is(ErrorCode::WebhookEndpointInvalid));
        assert!(check_endpoint_url("http://example.com/x", true, false).is_ok());
        let e = check_endpoint_url("https://[::1]/x", false, false).unwrap_err();
        assert!(e.message().contains("allow_private"));
        for loopback in [
            "http://localhost/x",
            "http://LOCALHOST./x",
            "http://api.localhost:8080/x",
            "http://127.0.0.1/x",
            "http://[::1]/x",
            "http://2130706433/x",
        ] {
            let e = check_endpoint_url(loopback, true, false).unwrap_err();
            assert!(e.message().contains("allow_private"), "{loopback}: {e}");
            assert!(
                check_endpoint_url(loopback, true, true).is_ok(),
                "{loopback}"
            );
        }
        assert!(check_endpoint_url("http://localhost.example/x", true, false).is_ok());
        let url = Url::parse("https://user:pw@example.com:8443/hook?token=abc#f").unwrap();
        assert_eq!(redact_url(&url), "https://example.com:8443/hook");
    }
}
