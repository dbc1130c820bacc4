//! Requests the server makes to addresses that people gave it (outgoing webhook bots today;
//! identity providers, the push service and link previews when they come): the guard against
//! server-side request forgery.
//!
//! A URL somebody typed must not let them reach what only the server can reach: its own
//! loopback services, the machines of its private network, a cloud metadata address. So every
//! such request goes through [`Guard::client`], whose connections
//! - resolve names through [`GuardedResolver`], which keeps only public addresses (the
//!   connection is made to an address it checked, so a name that resolves differently a moment
//!   later gains nothing),
//! - refuse an address written as a literal (`127.0.0.1`, `127.1`, `2130706433`, `[::1]`: the
//!   URL parser makes all of them one address) before anything is sent, and again on every
//!   redirect,
//! - follow at most [`MAX_REDIRECTS`] redirects, use no proxy from the environment, and have a
//!   connect timeout and a total timeout,
//!
//! and [`read_capped`] reads at most a given number of bytes of an answer.
//!
//! Operators who run a bot's service on the same machine or network name its range in
//! `--outgoing-allow` (an address or a CIDR range; repeatable): those addresses are then allowed.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// Redirects an outgoing request may follow.
pub const MAX_REDIRECTS: usize = 3;
/// How long a connection may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An address range: an address and how many leading bits of it count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Net {
    addr: IpAddr,
    prefix: u8,
}

impl Net {
    /// Whether `ip` is inside the range (an IPv4 address also matches its IPv4-mapped IPv6 form).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl FromStr for Net {
    type Err = String;

    /// `ADDRESS` (one address) or `ADDRESS/PREFIX`.
    fn from_str(text: &str) -> Result<Net, String> {
        let bad = || format!("{text:?} is not an IP address or a CIDR range (like 10.1.2.0/24)");
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((addr, prefix)) => (addr, Some(prefix.parse::<u8>().map_err(|_| bad())?)),
            None => (text.trim(), None),
        };
        let addr = canonical(addr.parse::<IpAddr>().map_err(|_| bad())?);
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(bits);
        if prefix > bits {
            return Err(bad());
        }
        Ok(Net { addr, prefix })
    }
}

impl fmt::Display for Net {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries; any other as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

/// Whether `ip` is an address of the public internet: not unspecified, loopback, private,
/// shared (carrier-grade NAT), link-local, unique-local, site-local, multicast, broadcast,
/// reserved, documentation or benchmarking, and not an IPv6 form that carries such an IPv4
/// address (mapped, compatible, NAT64, 6to4).
pub fn is_public(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0 // "this network", unspecified
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b)) // shared address space (RFC 6598)
        || (a == 169 && b == 254) // link-local, cloud metadata
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // documentation
        || (a == 192 && b == 88 && c == 99) // 6to4 relay anycast
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || (a == 198 && b == 51 && c == 100) // documentation
        || (a == 203 && b == 0 && c == 113) // documentation
        || a >= 224; // multicast, reserved, broadcast
    !refused
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let bits = u128::from(ip);
    let embedded_v4 = |at: u32| Ipv4Addr::from((bits >> at) as u32);
    if ip.is_unspecified() || ip.is_loopback() {
        return false;
    }
    // IPv4-compatible (::a.b.c.d, deprecated): judged by the IPv4 address.
    if bits >> 32 == 0 {
        return is_public_v4(embedded_v4(0));
    }
    // NAT64 (64:ff9b::/96): judged by the IPv4 address it reaches.
    if bits >> 32 == 0x0064_ff9b_0000_0000_0000_0000 {
        return is_public_v4(embedded_v4(0));
    }
    // 6to4 (2002::/16): the IPv4 address in bits 16..48.
    if segments[0] == 0x2002 {
        return is_public_v4(embedded_v4(80));
    }
    let refused = (segments[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (segments[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (segments[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
        || (segments[0] & 0xff00) == 0xff00 // multicast
        || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
        || (segments[0] == 0x0100 && segments[1..4] == [0, 0, 0]) // discard-only 100::/64
        || (segments[0] == 0x2001 && segments[1] < 0x0200); // IETF protocol assignments, Teredo
    !refused
}

/// Which addresses outgoing requests may reach: public ones, and those an operator allowed.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    pub allow: Vec<Net>,
}

/// Why an outgoing request was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not an `http` or `https` URL with a host.
    NotHttp,
    /// The host is, or resolves only to, addresses that are not allowed.
    Disallowed { host: String },
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::NotHttp => write!(f, "not an http(s) URL with a host"),
            Refused::Disallowed { host } => write!(
                f,
                "{host} is a private or disallowed network address (allow it with --outgoing-allow)"
            ),
        }
    }
}

impl std::error::Error for Refused {}

impl Guard {
    pub fn new(allow: Vec<Net>) -> Guard {
        Guard { allow }
    }

    /// Whether a request may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allow.iter().any(|net| net.contains(ip))
    }

    /// Checks what can be checked of `url` without resolving it: an `http(s)` URL whose host,
    /// when it is an address, is allowed. (A name is checked when it is resolved.)
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), Refused> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refused::NotHttp);
        }
        // The URL parser has already made every spelling of an IPv4 address (`127.1`,
        // `2130706433`, `0x7f.1`) its dotted form, and put IPv6 ones in brackets.
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or(Refused::NotHttp)?;
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        let Ok(ip) = literal.parse::<IpAddr>() else {
            return Ok(());
        };
        if self.permits(ip) {
            Ok(())
        } else {
            Err(Refused::Disallowed {
                host: ip.to_string(),
            })
        }
    }

    /// An HTTP client whose every connection and redirect is checked, with no proxy from the
    /// environment and the given total timeout.
    pub fn client(self: &Arc<Self>, timeout: Duration) -> reqwest::Result<reqwest::Client> {
        let on_redirect = self.clone();
        reqwest::Client::builder()
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(timeout)
            .dns_resolver(Arc::new(GuardedResolver {
                guard: self.clone(),
            }))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                if attempt.previous().len() > MAX_REDIRECTS {
                    return attempt.error("too many redirects");
                }
                match on_redirect.check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(refused) => attempt.error(refused),
                }
            }))
            .build()
    }
}

/// Name resolution that keeps only the addresses its guard permits, and fails when none is left.
pub struct GuardedResolver {
    guard: Arc<Guard>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.guard.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|addr| guard.permits(addr.ip()))
                .collect();
            if kept.is_empty() {
                return Err(Box::new(Refused::Disallowed { host }) as _);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether a failed request failed because the guard refused its address (directly, on a
/// redirect or when resolving).
pub fn was_refused(error: &reqwest::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<Refused>().is_some() {
            return true;
        }
        source = e.source();
    }
    false
}

/// The body of `response`, or `None` once it passes `limit` bytes.
pub async fn read_capped(
    mut response: reqwest::Response,
    limit: usize,
) -> reqwest::Result<Option<Vec<u8>>> {
    if response
        .content_length()
        .is_some_and(|declared| declared > limit as u64)
    {
        return Ok(None);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            return Ok(None);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Some(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    #[test]
    fn internal_addresses_in_every_spelling_are_refused() {
        let guard = Guard::default();
        for text in [
            "http://127.0.0.1:8080/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://user@127.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://0.0.0.0/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://172.31.255.255/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://224.0.0.1/",
            "http://255.255.255.255/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://[ff02::1]/",
            "http://[64:ff9b::a00:1]/",
            "http://[2002:7f00:1::]/",
            "http://[::]/",
        ] {
            assert!(
                matches!(guard.check_url(&url(text)), Err(Refused::Disallowed { .. })),
                "{text} was let through"
            );
        }
        for text in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "data:text/plain,x",
        ] {
            assert_eq!(guard.check_url(&url(text)), Err(Refused::NotHttp), "{text}");
        }
    }

    #[test]
    fn public_addresses_and_names_pass_the_url_check() {
        let guard = Guard::default();
        for text in [
            "http://93.184.216.34/",
            "https://[2606:4700::6810:84e5]/",
            "https://example.com/hook",
            "http://172.32.0.1/",
            "http://[64:ff9b::5db8:d822]/",
        ] {
            assert_eq!(guard.check_url(&url(text)), Ok(()), "{text}");
        }
    }

    #[test]
    fn an_allowlist_lets_its_ranges_through_and_nothing_else() {
        let guard = Guard::new(vec![
            "127.0.0.1".parse().unwrap(),
            "10.1.0.0/16".parse().unwrap(),
        ]);
        assert_eq!(guard.check_url(&url("http://127.0.0.1:9/")), Ok(()));
        assert_eq!(guard.check_url(&url("http://[::ffff:127.0.0.1]/")), Ok(()));
        assert_eq!(guard.check_url(&url("http://10.1.200.3/")), Ok(()));
        assert!(guard.check_url(&url("http://127.0.0.2/")).is_err());
        assert!(guard.check_url(&url("http://10.2.0.1/")).is_err());
        assert!(guard.check_url(&url("http://[::1]/")).is_err());
        let v6: Net = "fd00:1::/32".parse().unwrap();
        assert!(v6.contains("fd00:1:ffff::5".parse().unwrap()));
        assert!(!v6.contains("fd00:2::5".parse().unwrap()));
        assert!("0.0.0.0/0"
            .parse::<Net>()
            .unwrap()
            .contains("8.8.8.8".parse().unwrap()));
        for bad in ["", "localhost", "10.0.0.0/33", "::1/129", "10.0.0.0/x"] {
            assert!(bad.parse::<Net>().is_err(), "{bad}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_when_resolved() {
        use reqwest::dns::Resolve;
        let guard = Arc::new(Guard::default());
        let resolver = GuardedResolver {
            guard: guard.clone(),
        };
        let name = reqwest::dns::Name::from_str("localhost").unwrap();
        let refused = resolver.resolve(name).await.err().unwrap();
        assert!(refused.downcast_ref::<Refused>().is_some(), "{refused}");
        let allowed = GuardedResolver {
            guard: Arc::new(Guard::new(vec![
                "127.0.0.0/8".parse().unwrap(),
                "::1".parse().unwrap(),
            ])),
        };
        let name = reqwest::dns::Name::from_str("localhost").unwrap();
        let addrs: Vec<SocketAddr> = allowed.resolve(name).await.unwrap().collect();
        assert!(!addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback()));
    }
}
