//! The address guard of outbound requests: which IP addresses are not
//! public (loopback, private, link-local, cloud metadata, and IPv6 forms that
//! embed them), the [`Policy`] that may allow some anyway, and the errors a
//! fetch reports to API clients.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Maximum number of redirects [`Fetcher::get`](crate::server::fetch::Fetcher::get) follows.
pub const MAX_REDIRECTS: usize = 3;

// ---------------------------------------------------------------------------
// Address classification
// ---------------------------------------------------------------------------

/// Returns why `ip` must not be contacted, or `None` if it is a public address.
///
/// IPv6 addresses that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
/// IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`,
/// 6to4 `2002::/16`) are judged by the embedded address. Anything outside
/// the IPv6 global unicast range `2000::/3` is refused.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

const AWS_METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);

fn forbidden_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let reason = match (a, b, c) {
        _ if ip == Ipv4Addr::UNSPECIFIED => "unspecified address",
        _ if ip == Ipv4Addr::BROADCAST => "broadcast address",
        // AWS/GCP/Azure/OpenStack metadata; Azure's wireserver is a public address.
        _ if ip == Ipv4Addr::new(169, 254, 169, 254) || ip == Ipv4Addr::new(168, 63, 129, 16) => {
            "cloud metadata endpoint"
        }
        (0, _, _) => "'this network' range 0.0.0.0/8",
        (127, _, _) => "loopback address",
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => "private network address",
        (169, 254, _) => "link-local address",
        (100, 64..=127, _) => "carrier-grade NAT range 100.64.0.0/10",
        (192, 0, 0) => "IETF protocol assignment range 192.0.0.0/24",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation range",
        (192, 88, 99) => "6to4 relay anycast range 192.88.99.0/24",
        (198, 18..=19, _) => "benchmarking range 198.18.0.0/15",
        (224..=239, _, _) => "multicast address",
        (240..=255, _, _) => "reserved range 240.0.0.0/4",
        _ => return None,
    };
    Some(reason)
}

fn low32(s: &[u16; 8]) -> Ipv4Addr {
    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8)
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_unspecified() {
        return Some("unspecified address");
    }
    if ip.is_loopback() {
        return Some("loopback address");
    }
    if ip == AWS_METADATA_V6 {
        return Some("cloud metadata endpoint");
    }
    // ::ffff:a.b.c.d (IPv4-mapped): this *is* the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    // ::a.b.c.d (deprecated IPv4-compatible) and ::ffff:0:a.b.c.d (SIIT):
    // name the embedded class; public ones fall through to "reserved".
    if (s[..6] == [0; 6] || s[..6] == [0, 0, 0, 0, 0xffff, 0])
        && let Some(r) = forbidden_v4(low32(&s))
    {
        return Some(r);
    }
    // NAT64 well-known prefix 64:ff9b::/96.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return forbidden_v4(low32(&s));
    }
    // NAT64 local-use prefix 64:ff9b:1::/48 (RFC 8215). Only the /96 layout
    // can be checked unambiguously; refuse the others.
    if s[..3] == [0x64, 0xff9b, 1] {
        if s[3..6] == [0, 0, 0] {
            return forbidden_v4(low32(&s));
        }
        return Some("NAT64 local-use range 64:ff9b:1::/48");
    }
    // 6to4 2002:AABB:CCDD::/48 embeds the IPv4 address AA.BB.CC.DD.
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return forbidden_v4(v4);
    }
    let reason = match s[0] {
        0x0100 if s[1..4] == [0, 0, 0] => "discard-only range 100::/64",
        0xfc00..=0xfdff => "private network address (unique local)",
        0xfe80..=0xfebf => "link-local address",
        0xfec0..=0xfeff => "site-local address",
        0xff00..=0xffff => "multicast address",
        0x2001 if s[1] == 0 => "Teredo range 2001::/32",
        0x2001 if s[1] == 0x0db8 => "documentation range",
        0x2001 if s[1] == 2 && s[2] == 0 => "benchmarking range 2001:2::/48",
        0x3fff if s[1] <= 0x0fff => "documentation range",
        x if x & 0xe000 != 0x2000 => "reserved IPv6 range",
        _ => return None,
    };
    Some(reason)
}

// ---------------------------------------------------------------------------
// Policy
// ---------------------------------------------------------------------------

/// Which non-public destinations are allowed anyway.
///
/// `Policy::default()` is the strict production policy.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// Switches the address guard off entirely (tests, closed networks).
    /// Scheme, credential and redirect rules still apply.
    pub allow_private: bool,
    /// Exact socket addresses (IP and port) that are allowed even though the
    /// IP is not public, e.g. a test server on `127.0.0.1:PORT`. Applies to
    /// literal IP hosts and to resolved names alike.
    pub allow_exact: Vec<SocketAddr>,
    /// When set, only these host names (or IP literals, as the URL writes
    /// them) may be fetched, on every hop; checked before any lookup. An
    /// empty list refuses every URL.
    pub allow_hosts: Option<Vec<String>>,
}

impl Policy {
    /// Checks one destination (`host` is only used for the error message).
    pub fn check(&self, host: &str, addr: SocketAddr) -> Result<(), FetchError> {
        if self.allow_private || self.allow_exact.contains(&addr) {
            return Ok(());
        }
        match forbidden_reason(addr.ip()) {
            None => Ok(()),
            Some(reason) => {
                tracing::info!(host, ip = %addr.ip(), reason, "refused outbound request to non-public address");
                Err(FetchError::Forbidden { host: host.to_string(), ip: addr.ip(), reason })
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// Why a fetch failed. `Display` is user-facing and never includes response bodies.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("invalid URL: {0}")]
    BadUrl(String),
    #[error("refusing to connect to {host}: {ip} is not a public address ({reason})")]
    Forbidden { host: String, ip: IpAddr, reason: &'static str },
    #[error("could not resolve host {0}")]
    Resolve(String),
    #[error("response body is too large: {bytes} bytes exceeds the limit of {max_bytes} bytes")]
    TooLarge { bytes: u64, max_bytes: u64 },
    #[error("the request timed out")]
    Timeout,
    #[error("the server responded with HTTP status {0}")]
    Status(u16),
    #[error("too many redirects (at most {MAX_REDIRECTS} are followed)")]
    TooManyRedirects,
    #[error("invalid request header: {0}")]
    InvalidHeader(String),
    #[error("network error: {0}")]
    Network(String),
    #[error("this server does not fetch from {0:?} (its url allow-list)")]
    HostNotAllowed(String),
}
