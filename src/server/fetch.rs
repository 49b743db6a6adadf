//! SSRF-guarded outbound HTTP for user-supplied URLs.
//!
//! The service fetches models from URLs that API clients hand it
//! (`POST /v1/validate` with `{"url": ...}`) and delivers webhooks to URLs
//! they register. Both are server-side request forgery vectors: a client
//! could point us at `http://127.0.0.1:…`, a cloud metadata endpoint, or
//! anything else on our internal network. Everything outbound goes through
//! [`Fetcher`], which enforces:
//!
//! * **Syntax.** Only `http` and `https`, a host is required, and URLs with
//!   credentials (`user:pass@`) are refused. URLs are parsed with the `url`
//!   crate (WHATWG rules), whose host parser normalises every IPv4 spelling
//!   (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, full-width digits, a
//!   trailing dot) to a canonical address before we look at it.
//! * **Address policy.** Literal IP hosts are checked directly. Domain names
//!   are resolved exactly once per request hop through a [`NameResolver`];
//!   if *any* answer is not publicly routable (see [`forbidden_reason`]) the
//!   request is refused, unless the [`Policy`] explicitly allows it.
//! * **Pinning (anti DNS rebinding).** Each hop is sent with a fresh
//!   `reqwest::Client` whose DNS resolver only ever returns the addresses
//!   that were just checked, so reqwest never performs a lookup of its own.
//!   Proxies (including `HTTP_PROXY` from the environment) are disabled and
//!   reqwest's own redirect handling is off.
//! * **Redirects.** [`Fetcher::get`] follows at most [`MAX_REDIRECTS`]
//!   redirects itself, re-running the syntax and address checks on every
//!   hop. [`Fetcher::post`] (webhooks) never follows redirects.
//! * **Limits.** The whole operation (every hop, body included) is bounded
//!   by one deadline, and response bodies are streamed and abandoned as soon
//!   as they exceed the caller's byte limit.
//!
//! Error messages ([`FetchError`]) are meant to be shown to API clients.
//! They never contain response bodies.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, LOCATION};

pub use super::fetch_policy::{FetchError, MAX_REDIRECTS, Policy, forbidden_reason};
use super::fetch_resolve::PinnedResolve;
pub use super::fetch_resolve::{NameResolver, ResolveFuture, StaticResolver, SystemResolver};
use url::{Host, Url};

/// How much of a webhook response body [`Fetcher::post`] reads (and discards).
pub const POST_RESPONSE_DISCARD_LIMIT: u64 = 64 * 1024;

/// Longest URL accepted, in bytes.
pub const MAX_URL_LEN: usize = 8 * 1024;

/// Upper bound on the TCP/TLS connect phase of a single hop.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

const USER_AGENT: &str = concat!("meshcheck/", env!("CARGO_PKG_VERSION"));

/// `error: source: source…`, skipping repeated messages.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut last = out.clone();
    let mut cur = err.source();
    while let Some(e) = cur {
        let msg = e.to_string();
        if msg != last && !out.ends_with(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
        last = msg;
        cur = e.source();
    }
    out
}

fn map_reqwest(err: reqwest::Error) -> FetchError {
    if err.is_timeout() {
        return FetchError::Timeout;
    }
    let what = if err.is_connect() {
        "could not connect"
    } else if err.is_body() || err.is_decode() {
        "error while reading the response"
    } else {
        "request failed"
    };
    // The innermost cause ("Connection refused", a TLS certificate problem, ...)
    // is the useful part; reqwest's wrappers and the caller's own URL are noise.
    let mut cause: &dyn std::error::Error = &err;
    while let Some(next) = cause.source() {
        cause = next;
    }
    FetchError::Network(format!("{what}: {cause}"))
}

// ---------------------------------------------------------------------------
// Fetcher
// ---------------------------------------------------------------------------

/// SSRF-guarded HTTP client. Cheap to clone.
#[derive(Clone)]
pub struct Fetcher {
    policy: Policy,
    resolver: Arc<dyn NameResolver>,
}

impl fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fetcher").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher using the system resolver.
    pub fn new(policy: Policy) -> Self {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    pub fn with_resolver(policy: Policy, resolver: Arc<dyn NameResolver>) -> Self {
        Self { policy, resolver }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Syntactic, resolution and address checks only; sends nothing.
    /// Used to reject a webhook URL at submission time.
    pub async fn check_url(&self, url: &str) -> Result<(), FetchError> {
        let url = parse_url(url)?;
        self.resolve_checked(&url).await.map(drop)
    }

    /// GETs `url`, following up to [`MAX_REDIRECTS`] redirects (each hop checked
    /// like the first), and returns the body of the final 2xx response.
    /// Everything, body included, must finish within `timeout`.
    pub async fn get(&self, url: &str, max_bytes: u64, timeout: Duration) -> Result<Vec<u8>, FetchError> {
        tokio::time::timeout(timeout, self.get_inner(url, max_bytes, timeout)).await.unwrap_or(Err(FetchError::Timeout))
    }

    async fn get_inner(&self, url: &str, max_bytes: u64, timeout: Duration) -> Result<Vec<u8>, FetchError> {
        let mut url = parse_url(url)?;
        let mut redirects = 0;
        loop {
            let addrs = self.resolve_checked(&url).await?;
            let client = pinned_client(addrs, timeout)?;
            tracing::debug!(url = %url, "fetching");
            let mut resp = client.get(url.clone()).send().await.map_err(map_reqwest)?;
            let status = resp.status();

            if matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
                && let Some(location) = resp.headers().get(LOCATION)
            {
                if redirects >= MAX_REDIRECTS {
                    return Err(FetchError::TooManyRedirects);
                }
                let location =
                    location.to_str().map_err(|_| FetchError::BadUrl("redirect location is not valid text".into()))?;
                let next =
                    url.join(location).map_err(|e| FetchError::BadUrl(format!("invalid redirect location: {e}")))?;
                validate_url(&next)?;
                tracing::debug!(from = %url, to = %next, "following redirect");
                redirects += 1;
                url = next;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }

            if let Some(len) = resp.content_length()
                && len > max_bytes
            {
                return Err(FetchError::TooLarge { bytes: len, max_bytes });
            }
            let initial = resp.content_length().unwrap_or(0).min(max_bytes).min(1 << 20);
            let mut body = Vec::with_capacity(initial as usize);
            while let Some(chunk) = resp.chunk().await.map_err(map_reqwest)? {
                let total = body.len() as u64 + chunk.len() as u64;
                if total > max_bytes {
                    return Err(FetchError::TooLarge { bytes: total, max_bytes });
                }
                body.extend_from_slice(&chunk);
            }
            return Ok(body);
        }
    }

    /// POSTs `body` to `url` (webhook delivery) and returns the response status.
    /// Redirects are not followed: a 3xx is returned as is. At most
    /// [`POST_RESPONSE_DISCARD_LIMIT`] bytes of the response body are read and discarded.
    pub async fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<u16, FetchError> {
        tokio::time::timeout(timeout, self.post_inner(url, headers, body, timeout))
            .await
            .unwrap_or(Err(FetchError::Timeout))
    }

    async fn post_inner(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<u16, FetchError> {
        let url = parse_url(url)?;
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| FetchError::InvalidHeader(format!("bad header name {name:?}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| FetchError::InvalidHeader(format!("bad value for header {name}")))?;
            map.append(name, value);
        }
        let addrs = self.resolve_checked(&url).await?;
        let client = pinned_client(addrs, timeout)?;
        let mut resp = client.post(url).headers(map).body(body).send().await.map_err(map_reqwest)?;
        let status = resp.status().as_u16();
        let mut discarded = 0u64;
        while discarded < POST_RESPONSE_DISCARD_LIMIT {
            match resp.chunk().await {
                Ok(Some(chunk)) => discarded += chunk.len() as u64,
                Ok(None) | Err(_) => break,
            }
        }
        Ok(status)
    }

    /// Resolves the URL's host once and checks every answer against the policy.
    /// Returns the checked addresses (with the URL's port) to pin the connection to.
    async fn resolve_checked(&self, url: &Url) -> Result<Vec<SocketAddr>, FetchError> {
        validate_url(url)?;
        if let Some(allowed) = &self.policy.allow_hosts {
            let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
            if !allowed.iter().any(|a| a.trim_start_matches('[').trim_end_matches(']').eq_ignore_ascii_case(host)) {
                return Err(FetchError::HostNotAllowed(host.to_string()));
            }
        }
        let port = url.port_or_known_default().ok_or_else(|| FetchError::BadUrl("the URL has no port".into()))?;
        let (host, answers) = match url.host() {
            None => return Err(FetchError::BadUrl("the URL has no host".into())),
            Some(Host::Ipv4(ip)) => (ip.to_string(), vec![SocketAddr::new(ip.into(), port)]),
            Some(Host::Ipv6(ip)) => (format!("[{ip}]"), vec![SocketAddr::new(ip.into(), port)]),
            Some(Host::Domain(name)) => {
                if name.is_empty() {
                    return Err(FetchError::BadUrl("the URL has no host".into()));
                }
                let answers =
                    self.resolver.resolve(name, port).await.map_err(|e| FetchError::Resolve(format!("{name}: {e}")))?;
                (name.to_string(), answers)
            }
        };
        let mut addrs: Vec<SocketAddr> = Vec::with_capacity(answers.len());
        for mut addr in answers {
            addr.set_port(port);
            self.policy.check(&host, addr)?;
            if !addrs.contains(&addr) {
                addrs.push(addr);
            }
        }
        if addrs.is_empty() {
            return Err(FetchError::Resolve(format!("{host}: no addresses found")));
        }
        tracing::debug!(host, ?addrs, "destination checked");
        Ok(addrs)
    }
}

fn parse_url(s: &str) -> Result<Url, FetchError> {
    if s.len() > MAX_URL_LEN {
        return Err(FetchError::BadUrl(format!("the URL is longer than {MAX_URL_LEN} bytes")));
    }
    let url = Url::parse(s).map_err(|e| FetchError::BadUrl(e.to_string()))?;
    validate_url(&url)?;
    Ok(url)
}

fn validate_url(url: &Url) -> Result<(), FetchError> {
    match url.scheme() {
        "http" | "https" => {}
        other => {
            return Err(FetchError::BadUrl(format!("unsupported scheme '{other}' (only http and https are allowed)")));
        }
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(FetchError::BadUrl("URLs containing credentials (user:password@) are not allowed".into()));
    }
    if !url.has_host() {
        return Err(FetchError::BadUrl("the URL has no host".into()));
    }
    Ok(())
}

/// A one-hop client: no proxy, no redirects, no connection reuse, and DNS
/// pinned to `addrs` (reqwest never resolves anything itself).
fn pinned_client(addrs: Vec<SocketAddr>, timeout: Duration) -> Result<reqwest::Client, FetchError> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(timeout.min(MAX_CONNECT_TIMEOUT))
        .pool_max_idle_per_host(0)
        .dns_resolver(PinnedResolve { addrs })
        .user_agent(USER_AGENT)
        .build()
        .map_err(|e| FetchError::Network(format!("could not set up the HTTP client: {}", error_chain(&e))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    const T: Duration = Duration::from_secs(5);
    const MAX: u64 = 1 << 20;
    const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    // ----- tiny raw HTTP/1.1 test server -----

    #[derive(Clone, Debug)]
    struct Request {
        method: String,
        path: String,
        head: String,
        body: Vec<u8>,
    }

    impl Request {
        fn header(&self, name: &str) -> Option<&str> {
            self.head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then_some(v.trim())
            })
        }
    }

    enum Reply {
        Raw(Vec<u8>),
        /// Send these bytes, then stall with the connection open.
        HeadThenHang(Vec<u8>),
        /// A chunked body that never ends.
        EndlessChunked,
        /// Never answer at all.
        Hang,
    }

    fn response(status: u16, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut out = format!("HTTP/1.1 {status} Test\r\ncontent-length: {}\r\nconnection: close\r\n", body.len());
        for (k, v) in headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        let mut out = out.into_bytes();
        out.extend_from_slice(body);
        Reply::Raw(out)
    }

    fn ok(body: &str) -> Reply {
        response(200, &[], body.as_bytes())
    }

    fn redirect(status: u16, location: &str) -> Reply {
        response(status, &[("location", location)], b"")
    }

    async fn read_request(s: &mut TcpStream) -> Option<Request> {
        let mut buf = Vec::new();
        let mut tmp = [0u8; 4096];
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let n = s.read(&mut tmp).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let mut first = head.split_whitespace();
        let method = first.next()?.to_string();
        let path = first.next()?.to_string();
        let mut req = Request { method, path, head, body: buf[head_end..].to_vec() };
        let len: usize = req.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        while req.body.len() < len {
            let n = s.read(&mut tmp).await.ok()?;
            if n == 0 {
                break;
            }
            req.body.extend_from_slice(&tmp[..n]);
        }
        Some(req)
    }

    /// Starts a server on 127.0.0.1:0; `handler` maps each request to a reply.
    async fn serve(handler: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let handler = Arc::new(handler);
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let handler = handler.clone();
                tokio::spawn(async move {
                    let Some(req) = read_request(&mut s).await else { return };
                    match handler(&req) {
                        Reply::Raw(bytes) => {
                            let _ = s.write_all(&bytes).await;
                            let _ = s.shutdown().await;
                        }
                        Reply::HeadThenHang(bytes) => {
                            let _ = s.write_all(&bytes).await;
                            tokio::time::sleep(Duration::from_secs(60)).await;
                        }
                        Reply::EndlessChunked => {
                            let _ = s.write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").await;
                            let chunk = format!("400\r\n{}\r\n", "x".repeat(1024));
                            while s.write_all(chunk.as_bytes()).await.is_ok() {}
                        }
                        Reply::Hang => tokio::time::sleep(Duration::from_secs(60)).await,
                    }
                });
            }
        });
        addr
    }

    /// Server that counts requests and answers "hit".
    async fn counting_server() -> (SocketAddr, Arc<AtomicUsize>) {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let addr = serve(move |_| {
            h.fetch_add(1, Ordering::SeqCst);
            ok("hit")
        })
        .await;
        (addr, hits)
    }

    fn allow(addr: SocketAddr) -> Policy {
        Policy { allow_private: false, allow_exact: vec![addr], allow_hosts: None }
    }

    /// Answers call N with `answers[min(N, len - 1)]` and counts calls.
    struct FlipResolver {
        calls: AtomicUsize,
        answers: Vec<Vec<IpAddr>>,
    }

    impl FlipResolver {
        fn new(answers: Vec<Vec<IpAddr>>) -> Arc<Self> {
            Arc::new(Self { calls: AtomicUsize::new(0), answers })
        }
        fn calls(&self) -> usize {
            self.calls.load(Ordering::SeqCst)
        }
    }

    impl NameResolver for FlipResolver {
        fn resolve<'a>(&'a self, _host: &'a str, port: u16) -> ResolveFuture<'a> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let ips = &self.answers[n.min(self.answers.len() - 1)];
            let addrs = ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect();
            Box::pin(std::future::ready(Ok(addrs)))
        }
    }

    // ----- address classification -----

    #[test]
    fn classification_table() {
        const LOOP: Option<&str> = Some("loopback address");
        const PRIV: Option<&str> = Some("private network address");
        const ULA: Option<&str> = Some("private network address (unique local)");
        const LL: Option<&str> = Some("link-local address");
        const MC: Option<&str> = Some("multicast address");
        const UNSPEC: Option<&str> = Some("unspecified address");
        const META: Option<&str> = Some("cloud metadata endpoint");
        const DOC: Option<&str> = Some("documentation range");
        const CGNAT: Option<&str> = Some("carrier-grade NAT range 100.64.0.0/10");
        const BENCH4: Option<&str> = Some("benchmarking range 198.18.0.0/15");
        const RES4: Option<&str> = Some("reserved range 240.0.0.0/4");
        const RES6: Option<&str> = Some("reserved IPv6 range");
        const THIS: Option<&str> = Some("'this network' range 0.0.0.0/8");
        let table: &[(&str, Option<&str>)] = &[
            // public IPv4, including the neighbours of every range
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("1.0.0.0", None),
            ("126.255.255.255", None),
            ("128.0.0.0", None),
            ("9.255.255.255", None),
            ("11.0.0.0", None),
            ("172.15.255.255", None),
            ("172.32.0.0", None),
            ("192.167.255.255", None),
            ("192.169.0.0", None),
            ("169.253.255.255", None),
            ("169.255.0.0", None),
            ("100.63.255.255", None),
            ("100.128.0.0", None),
            ("198.17.255.255", None),
            ("198.20.0.0", None),
            ("192.0.1.255", None),
            ("192.0.3.0", None),
            ("192.88.98.255", None),
            ("198.51.99.255", None),
            ("203.0.114.0", None),
            ("223.255.255.255", None),
            // forbidden IPv4
            ("0.0.0.0", UNSPEC),
            ("0.1.2.3", THIS),
            ("0.255.255.255", THIS),
            ("127.0.0.1", LOOP),
            ("127.255.255.254", LOOP),
            ("10.0.0.1", PRIV),
            ("10.255.255.255", PRIV),
            ("172.16.0.0", PRIV),
            ("172.31.255.255", PRIV),
            ("192.168.0.1", PRIV),
            ("169.254.0.1", LL),
            ("169.254.255.255", LL),
            ("169.254.169.254", META),
            ("168.63.129.16", META),
            ("224.0.0.1", MC),
            ("239.255.255.255", MC),
            ("100.64.0.0", CGNAT),
            ("100.127.255.255", CGNAT),
            ("255.255.255.255", Some("broadcast address")),
            ("198.18.0.0", BENCH4),
            ("198.19.255.255", BENCH4),
            ("192.0.2.1", DOC),
            ("198.51.100.7", DOC),
            ("203.0.113.9", DOC),
            ("240.0.0.1", RES4),
            ("255.255.255.254", RES4),
            ("192.0.0.8", Some("IETF protocol assignment range 192.0.0.0/24")),
            ("192.0.0.192", Some("IETF protocol assignment range 192.0.0.0/24")),
            ("192.88.99.1", Some("6to4 relay anycast range 192.88.99.0/24")),
            // public IPv6
            ("2606:4700:4700::1111", None),
            ("2a00:1450:4001:81b::200e", None),
            ("2001:4860:4860::8888", None),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
            ("64:ff9b:1::808:808", None),
            ("2002:808:808::1", None),
            // forbidden IPv6
            ("::", UNSPEC),
            ("::1", LOOP),
            ("0:0:0:0:0:0:0:1", LOOP),
            ("fc00::1", ULA),
            ("fd12:3456::1", ULA),
            ("fd00:ec2::254", META),
            ("fe80::1", LL),
            ("febf:ffff::1", LL),
            ("fec0::1", Some("site-local address")),
            ("ff02::1", MC),
            ("ff0e::1", MC),
            ("2001:db8::1", DOC),
            ("2001:db8:ffff::1", DOC),
            ("3fff::1", DOC),
            ("2001::1", Some("Teredo range 2001::/32")),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("Teredo range 2001::/32")),
            ("2001:2::1", Some("benchmarking range 2001:2::/48")),
            ("100::1", Some("discard-only range 100::/64")),
            ("4000::1", RES6),
            ("::2:0:0:1", RES6),
            // IPv4-mapped ::ffff:a.b.c.d
            ("::ffff:127.0.0.1", LOOP),
            ("::ffff:7f00:1", LOOP),
            ("::ffff:10.1.2.3", PRIV),
            ("::ffff:169.254.169.254", META),
            ("::ffff:0.0.0.0", UNSPEC),
            ("::ffff:255.255.255.255", Some("broadcast address")),
            ("::ffff:100.64.1.1", CGNAT),
            // IPv4-compatible ::a.b.c.d and SIIT ::ffff:0:a.b.c.d
            ("::127.0.0.1", LOOP),
            ("::10.0.0.1", PRIV),
            ("::169.254.169.254", META),
            ("::8.8.8.8", RES6),
            ("::ffff:0:127.0.0.1", LOOP),
            // NAT64
            ("64:ff9b::7f00:1", LOOP),
            ("64:ff9b::127.0.0.1", LOOP),
            ("64:ff9b::a9fe:a9fe", META),
            ("64:ff9b::c0a8:101", PRIV),
            ("64:ff9b:1::7f00:1", LOOP),
            ("64:ff9b:1::c0a8:101", PRIV),
            ("64:ff9b:1:7f00:1::", Some("NAT64 local-use range 64:ff9b:1::/48")),
            ("64:ff9b:1:808:8:800::", Some("NAT64 local-use range 64:ff9b:1::/48")),
            ("64:ff9b:0:1::808:808", RES6),
            // 6to4
            ("2002:7f00:1::", LOOP),
            ("2002:7f00:0001:ffff::1", LOOP),
            ("2002:c0a8:101::1", PRIV),
            ("2002:a9fe:a9fe::", META),
            ("2002:0a00:0001::", PRIV),
        ];
        let mut failures = Vec::new();
        for &(ip, want) in table {
            let got = forbidden_reason(ip.parse().unwrap());
            if got != want {
                failures.push(format!("{ip}: got {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "misclassified:\n{}", failures.join("\n"));
    }

    #[test]
    fn url_crate_normalises_ipv4_spellings() {
        for spelling in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0x7F.0.0.1/",
            "http://0177.0.0.1/",
            "http://0177.1/",
            "http://127.1/",
            "http://127.0.1/",
            "http://127.0.0.1./",
            "http://%31%32%37.0.0.1/",
            "http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/",
            "HTTP://127.000.000.001/",
        ] {
            let url = Url::parse(spelling).unwrap();
            assert_eq!(url.host(), Some(Host::Ipv4(Ipv4Addr::LOCALHOST)), "{spelling}");
        }
        assert!(Url::parse("http://127.0.0.256/").is_err());
        assert!(Url::parse("http://0x100000000/").is_err());
    }

    // ----- the guard through the public API -----

    #[tokio::test]
    async fn loopback_and_metadata_refused_in_every_spelling() {
        let f = Fetcher::new(Policy::default());
        let cases: &[(&str, &str)] = &[
            ("http://127.0.0.1/", "127.0.0.1"),
            ("http://2130706433/", "127.0.0.1"),
            ("http://0x7f000001/", "127.0.0.1"),
            ("http://0x7f.1/", "127.0.0.1"),
            ("http://0177.0.0.1/", "127.0.0.1"),
            ("http://127.1/", "127.0.0.1"),
            ("http://127.0.0.1./", "127.0.0.1"),
            ("http://\u{ff11}\u{ff12}\u{ff17}.0.0.1/", "127.0.0.1"),
            ("https://127.0.0.1:8443/x", "127.0.0.1"),
            ("http://[::1]/", "::1"),
            ("http://[::ffff:127.0.0.1]/", "::ffff:127.0.0.1"),
            ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1"),
            ("http://[0:0:0:0:0:0:0:1]/", "::1"),
            ("http://[64:ff9b::7f00:1]/", "64:ff9b::7f00:1"),
            ("http://[2002:7f00:1::]/", "2002:7f00:1::"),
            ("http://localhost/", "127.0.0.1"),
            ("http://LocalHost:8080/", "127.0.0.1"),
            ("http://0.0.0.0/", "0.0.0.0"),
            ("http://0/", "0.0.0.0"),
            ("http://169.254.169.254/latest/meta-data", "169.254.169.254"),
            ("http://[fd00:ec2::254]/", "fd00:ec2::254"),
            ("http://10.0.0.1/", "10.0.0.1"),
            ("http://192.168.1.1:8080/", "192.168.1.1"),
        ];
        for &(url, want_ip) in cases {
            let err = f.get(url, MAX, T).await.unwrap_err();
            match &err {
                FetchError::Forbidden { ip, .. } if url.to_ascii_lowercase().contains("localhost") => {
                    // the system resolver may answer ::1 or 127.0.0.1
                    assert!(ip.is_loopback() || forbidden_reason(*ip) == Some("loopback address"), "{url}: {err}");
                }
                FetchError::Forbidden { ip, .. } => assert_eq!(*ip, want_ip.parse::<IpAddr>().unwrap(), "{url}"),
                other => panic!("{url}: expected Forbidden, got {other:?}"),
            }
            assert!(matches!(f.check_url(url).await, Err(FetchError::Forbidden { .. })), "check_url {url}");
            let post = f.post(url, &[], vec![], T).await;
            assert!(matches!(post, Err(FetchError::Forbidden { .. })), "post {url}: {post:?}");
        }
        let err = f.get("http://169.254.169.254/latest/meta-data", MAX, T).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to connect to 169.254.169.254: 169.254.169.254 is not a public address (cloud metadata endpoint)"
        );
    }

    #[tokio::test]
    async fn resolved_names_are_checked_all_answers() {
        let resolver = StaticResolver::new()
            .with("evil.test", [LOCALHOST])
            .with("mixed.test", ["93.184.216.34".parse().unwrap(), "10.1.2.3".parse().unwrap()])
            .with("mapped.test", ["::ffff:169.254.169.254".parse().unwrap()])
            .with("empty.test", [])
            .with("public.test", ["93.184.216.34".parse().unwrap(), "2606:2800:220:1::1".parse().unwrap()]);
        let f = Fetcher::with_resolver(Policy::default(), Arc::new(resolver));

        let err = f.get("http://evil.test/model.gltf", MAX, T).await.unwrap_err();
        assert!(
            matches!(&err, FetchError::Forbidden { host, ip, reason: "loopback address" } if host == "evil.test" && *ip == LOCALHOST),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "refusing to connect to evil.test: 127.0.0.1 is not a public address (loopback address)"
        );
        let err = f.check_url("https://MIXED.test/").await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { ip, .. } if ip.to_string() == "10.1.2.3"), "{err:?}");
        let err = f.check_url("http://mapped.test/").await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { reason: "cloud metadata endpoint", .. }), "{err:?}");
        assert!(matches!(f.check_url("http://empty.test/").await, Err(FetchError::Resolve(_))));
        let err = f.check_url("http://unknown.test/").await.unwrap_err();
        assert!(matches!(err, FetchError::Resolve(_)), "{err:?}");
        assert!(err.to_string().starts_with("could not resolve host unknown.test"), "{err}");
        // A public answer passes the check (nothing is sent by check_url).
        f.check_url("https://public.test/hook").await.unwrap();
        f.check_url("https://93.184.216.34/hook").await.unwrap();
    }

    #[tokio::test]
    async fn allow_exact_permits_only_that_socket_address() {
        let (a, hits_a) = counting_server().await;
        let (b, hits_b) = counting_server().await;
        let resolver = StaticResolver::new().with("models.test", [LOCALHOST]);
        let f = Fetcher::with_resolver(allow(a), Arc::new(resolver));

        assert_eq!(f.get(&format!("http://127.0.0.1:{}/m.gltf", a.port()), MAX, T).await.unwrap(), b"hit");
        assert_eq!(f.get(&format!("http://models.test:{}/m.gltf", a.port()), MAX, T).await.unwrap(), b"hit");
        f.check_url(&format!("http://127.0.0.1:{}/", a.port())).await.unwrap();
        let err = f.get(&format!("http://127.0.0.1:{}/", b.port()), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { .. }), "{err:?}");
        let err = f.get(&format!("http://models.test:{}/", b.port()), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { .. }), "{err:?}");
        assert_eq!(hits_a.load(Ordering::SeqCst), 2);
        assert_eq!(hits_b.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn allow_private_switches_the_guard_off() {
        let (a, _) = counting_server().await;
        let f = Fetcher::new(Policy { allow_private: true, allow_exact: vec![], allow_hosts: None });
        assert_eq!(f.get(&format!("http://127.0.0.1:{}/", a.port()), MAX, T).await.unwrap(), b"hit");
        assert_eq!(f.get(&format!("http://2130706433:{}/", a.port()), MAX, T).await.unwrap(), b"hit");
        f.check_url("http://10.0.0.1/").await.unwrap();
        // Syntax rules still apply.
        assert!(matches!(f.get("file:///etc/passwd", MAX, T).await, Err(FetchError::BadUrl(_))));
    }

    #[tokio::test]
    async fn redirects_are_rechecked_on_every_hop() {
        let (other, other_hits) = counting_server().await;
        let a = serve(move |req| match req.path.as_str() {
            "/to-ip" => redirect(302, &format!("http://127.0.0.1:{}/", other.port())),
            "/to-localhost" => redirect(301, &format!("http://localhost:{}/", other.port())),
            "/to-decimal" => redirect(307, &format!("http://2130706433:{}/", other.port())),
            "/to-metadata" => redirect(308, "http://169.254.169.254/latest/meta-data"),
            "/to-ftp" => redirect(302, "ftp://example.com/x"),
            "/to-creds" => redirect(302, "http://user:pw@example.com/"),
            "/to-garbage" => redirect(302, "http://[::1/"),
            "/no-location" => response(302, &[], b""),
            "/ok" => ok("fine"),
            _ => response(404, &[], b"SECRET-BODY"),
        })
        .await;
        let f = Fetcher::new(allow(a));
        let url = |p: &str| format!("http://127.0.0.1:{}{p}", a.port());

        for p in ["/to-ip", "/to-localhost", "/to-decimal", "/to-metadata"] {
            let err = f.get(&url(p), MAX, T).await.unwrap_err();
            assert!(matches!(err, FetchError::Forbidden { .. }), "{p}: {err:?}");
        }
        assert_eq!(other_hits.load(Ordering::SeqCst), 0);
        for p in ["/to-ftp", "/to-creds", "/to-garbage"] {
            let err = f.get(&url(p), MAX, T).await.unwrap_err();
            assert!(matches!(err, FetchError::BadUrl(_)), "{p}: {err:?}");
        }
        assert!(matches!(f.get(&url("/no-location"), MAX, T).await, Err(FetchError::Status(302))));
        let err = f.get(&url("/missing"), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Status(404)));
        assert_eq!(err.to_string(), "the server responded with HTTP status 404");
        assert_eq!(f.get(&url("/ok"), MAX, T).await.unwrap(), b"fine");
    }

    #[tokio::test]
    async fn at_most_three_redirects() {
        let a = serve(|req| {
            let n: u32 = req.path.strip_prefix("/r/").and_then(|n| n.parse().ok()).unwrap_or(0);
            if n == 0 {
                return ok("done");
            }
            let status = [301, 302, 303, 307, 308][n as usize % 5];
            if n.is_multiple_of(2) {
                redirect(status, &format!("http://{}/r/{}", req.header("host").unwrap(), n - 1))
            } else {
                redirect(status, &format!("{}", n - 1))
            }
        })
        .await;
        let f = Fetcher::new(allow(a));
        let url = |n: u32| format!("http://127.0.0.1:{}/r/{n}", a.port());
        assert_eq!(f.get(&url(3), MAX, T).await.unwrap(), b"done");
        assert_eq!(f.get(&url(1), MAX, T).await.unwrap(), b"done");
        let err = f.get(&url(4), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::TooManyRedirects), "{err:?}");
        assert_eq!(err.to_string(), "too many redirects (at most 3 are followed)");
    }

    #[tokio::test]
    async fn body_limits() {
        let a = serve(|req| match req.path.as_str() {
            "/chunked" => {
                let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_vec();
                for _ in 0..20 {
                    out.extend_from_slice(format!("400\r\n{}\r\n", "y".repeat(1024)).as_bytes());
                }
                out.extend_from_slice(b"0\r\n\r\n");
                Reply::Raw(out)
            }
            "/endless" => Reply::EndlessChunked,
            "/big-length" => Reply::HeadThenHang(b"HTTP/1.1 200 OK\r\ncontent-length: 1000000\r\n\r\n".to_vec()),
            "/exact" => ok(&"z".repeat(10_000)),
            _ => ok(""),
        })
        .await;
        let f = Fetcher::new(allow(a));
        let url = |p: &str| format!("http://127.0.0.1:{}{p}", a.port());

        let err = f.get(&url("/chunked"), 10_000, T).await.unwrap_err();
        assert!(matches!(err, FetchError::TooLarge { bytes, max_bytes: 10_000 } if bytes > 10_000), "{err:?}");
        assert_eq!(f.get(&url("/chunked"), 20 * 1024, T).await.unwrap().len(), 20 * 1024);

        // An endless body is abandoned as soon as it passes the limit.
        let start = Instant::now();
        let err = f.get(&url("/endless"), 100_000, T).await.unwrap_err();
        assert!(matches!(err, FetchError::TooLarge { max_bytes: 100_000, .. }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(2));

        // Content-Length over the limit is refused before any body is read
        // (the server never sends one, so reading would run into the timeout).
        let start = Instant::now();
        let err = f.get(&url("/big-length"), 1000, T).await.unwrap_err();
        assert!(matches!(err, FetchError::TooLarge { bytes: 1_000_000, max_bytes: 1000 }), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(err.to_string(), "response body is too large: 1000000 bytes exceeds the limit of 1000 bytes");

        assert_eq!(f.get(&url("/exact"), 10_000, T).await.unwrap().len(), 10_000);
        assert!(matches!(f.get(&url("/exact"), 9_999, T).await, Err(FetchError::TooLarge { .. })));
        assert_eq!(f.get(&url("/empty"), 0, T).await.unwrap(), b"");
    }

    #[tokio::test]
    async fn whole_operation_is_bounded_by_the_timeout() {
        let a = serve(|req| match req.path.as_str() {
            "/slow-body" => Reply::HeadThenHang(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc".to_vec()),
            "/redirect-then-hang" => redirect(302, "/hang"),
            _ => Reply::Hang,
        })
        .await;
        let f = Fetcher::new(allow(a));
        let limit = Duration::from_millis(300);
        for p in ["/hang", "/slow-body", "/redirect-then-hang"] {
            let start = Instant::now();
            let err = f.get(&format!("http://127.0.0.1:{}{p}", a.port()), MAX, limit).await.unwrap_err();
            let took = start.elapsed();
            assert!(matches!(err, FetchError::Timeout), "{p}: {err:?}");
            assert!(took >= Duration::from_millis(290) && took < Duration::from_secs(2), "{p}: {took:?}");
        }
        let start = Instant::now();
        let err = f.post(&format!("http://127.0.0.1:{}/hang", a.port()), &[], b"{}".to_vec(), limit).await;
        assert!(matches!(err, Err(FetchError::Timeout)), "{err:?}");
        assert!(start.elapsed() < Duration::from_secs(2));
        assert_eq!(FetchError::Timeout.to_string(), "the request timed out");
    }

    #[tokio::test]
    async fn bad_urls_are_refused() {
        let resolver = StaticResolver::new().with("example.com", ["93.184.216.34".parse().unwrap()]);
        let f = Fetcher::with_resolver(
            Policy { allow_private: true, allow_exact: vec![], allow_hosts: None },
            Arc::new(resolver),
        );
        let long = format!("http://example.com/{}", "a".repeat(MAX_URL_LEN));
        for url in [
            "ftp://example.com/model.gltf",
            "file:///etc/passwd",
            "file://localhost/etc/passwd",
            "gopher://example.com/",
            "data:text/plain,hello",
            "javascript:alert(1)",
            "mailto:a@example.com",
            "ws://example.com/",
            "http://user:pass@example.com/",
            "http://user@example.com/",
            "https://:pass@example.com/",
            "http://",
            "http:///",
            "https://[::1/",
            "not a url",
            "/relative/path",
            "",
            long.as_str(),
        ] {
            let err = f.get(url, MAX, T).await.unwrap_err();
            assert!(matches!(err, FetchError::BadUrl(_)), "get {url}: {err:?}");
            assert!(err.to_string().starts_with("invalid URL: "), "{err}");
            assert!(matches!(f.check_url(url).await, Err(FetchError::BadUrl(_))), "check_url {url}");
            assert!(matches!(f.post(url, &[], vec![], T).await, Err(FetchError::BadUrl(_))), "post {url}");
        }
        assert_eq!(
            f.check_url("ftp://example.com/").await.unwrap_err().to_string(),
            "invalid URL: unsupported scheme 'ftp' (only http and https are allowed)"
        );
        assert_eq!(
            f.check_url("http://user:pass@example.com/").await.unwrap_err().to_string(),
            "invalid URL: URLs containing credentials (user:password@) are not allowed"
        );
    }

    // ----- DNS rebinding -----

    /// First answer is checked and used; the resolver is asked exactly once,
    /// and reqwest never resolves the (non-existent) name itself.
    #[tokio::test]
    async fn rebinding_first_checked_answer_is_pinned() {
        let (a, hits) = counting_server().await;
        let resolver = FlipResolver::new(vec![vec![LOCALHOST], vec!["10.0.0.1".parse().unwrap()]]);
        let f = Fetcher::with_resolver(allow(a), resolver.clone());
        let body = f.get(&format!("http://rebind.test:{}/m.gltf", a.port()), MAX, T).await.unwrap();
        assert_eq!(body, b"hit");
        assert_eq!(resolver.calls(), 1);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    /// First answer is forbidden, the second would be 127.0.0.1 (allowed and
    /// reachable): the request is refused on the first answer, the second is never asked for.
    #[tokio::test]
    async fn rebinding_forbidden_first_answer_is_final() {
        let (a, hits) = counting_server().await;
        let resolver = FlipResolver::new(vec![vec!["192.168.0.10".parse().unwrap()], vec![LOCALHOST]]);
        let f = Fetcher::with_resolver(allow(a), resolver.clone());
        let url = format!("http://rebind.test:{}/", a.port());
        let err = f.get(&url, MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { ip, .. } if ip.to_string() == "192.168.0.10"), "{err:?}");
        assert_eq!(resolver.calls(), 1);
        assert_eq!(hits.load(Ordering::SeqCst), 0);
        // A later request is a new hop: resolved once more, gets the second answer.
        assert_eq!(f.get(&url, MAX, T).await.unwrap(), b"hit");
        assert_eq!(resolver.calls(), 2);
    }

    /// Each redirect hop resolves exactly once and is checked again.
    #[tokio::test]
    async fn rebinding_between_redirect_hops_is_caught() {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let a = serve(move |req| {
            h.fetch_add(1, Ordering::SeqCst);
            redirect(
                302,
                &format!("http://rebind.test:{}/final", req.header("host").unwrap().rsplit(':').next().unwrap()),
            )
        })
        .await;
        let resolver = FlipResolver::new(vec![vec![LOCALHOST], vec!["127.0.0.2".parse().unwrap()]]);
        let f = Fetcher::with_resolver(allow(a), resolver.clone());
        let err = f.get(&format!("http://rebind.test:{}/start", a.port()), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Forbidden { ip, .. } if ip.to_string() == "127.0.0.2"), "{err:?}");
        assert_eq!(resolver.calls(), 2);
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    /// The per-hop client connects only to the pinned address, whatever the URL's host.
    #[tokio::test]
    async fn pinned_client_never_resolves() {
        let (a, hits) = counting_server().await;
        let client = pinned_client(vec![a], T).unwrap();
        let resp = client.get(format!("http://no-such-host.invalid:{}/", a.port())).send().await.unwrap();
        assert_eq!(resp.text().await.unwrap(), "hit");
        assert_eq!(hits.load(Ordering::SeqCst), 1);
    }

    // ----- webhooks -----

    #[tokio::test]
    async fn post_returns_status_and_does_not_follow_redirects() {
        let seen = Arc::new(Mutex::new(Vec::<Request>::new()));
        let s = seen.clone();
        let a = serve(move |req| {
            s.lock().unwrap().push(req.clone());
            match req.path.as_str() {
                "/hook" => response(202, &[], &vec![b'q'; 200 * 1024]),
                "/moved" => redirect(302, "/hook"),
                _ => response(500, &[], b"SECRET"),
            }
        })
        .await;
        let f = Fetcher::new(allow(a));
        let url = |p: &str| format!("http://127.0.0.1:{}{p}", a.port());
        let headers = vec![
            ("content-type".to_string(), "application/json".to_string()),
            ("X-Meshcheck-Signature".to_string(), "sha256=abc".to_string()),
        ];

        assert_eq!(f.post(&url("/hook"), &headers, br#"{"ok":true}"#.to_vec(), T).await.unwrap(), 202);
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1);
            assert_eq!(seen[0].method, "POST");
            assert_eq!(seen[0].path, "/hook");
            assert_eq!(seen[0].header("x-meshcheck-signature"), Some("sha256=abc"));
            assert_eq!(seen[0].header("content-type"), Some("application/json"));
            assert_eq!(seen[0].body, br#"{"ok":true}"#);
        }
        assert_eq!(f.post(&url("/moved"), &headers, b"{}".to_vec(), T).await.unwrap(), 302);
        assert_eq!(seen.lock().unwrap().len(), 2, "redirect must not be followed");
        assert_eq!(f.post(&url("/fail"), &[], vec![], T).await.unwrap(), 500);

        let bad = vec![("bad header".to_string(), "x".to_string())];
        assert!(matches!(f.post(&url("/hook"), &bad, vec![], T).await, Err(FetchError::InvalidHeader(_))));
        let bad = vec![("x-ok".to_string(), "line\nbreak".to_string())];
        assert!(matches!(f.post(&url("/hook"), &bad, vec![], T).await, Err(FetchError::InvalidHeader(_))));
        assert_eq!(seen.lock().unwrap().len(), 3);

        let strict = Fetcher::new(Policy::default());
        assert!(matches!(strict.post(&url("/hook"), &headers, vec![], T).await, Err(FetchError::Forbidden { .. })));
        assert_eq!(seen.lock().unwrap().len(), 3);
    }

    #[tokio::test]
    async fn connection_refused_is_a_network_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let f = Fetcher::new(allow(addr));
        let err = f.get(&format!("http://127.0.0.1:{}/", addr.port()), MAX, T).await.unwrap_err();
        assert!(matches!(err, FetchError::Network(_)), "{err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with("network error: could not connect"), "{msg}");
        assert!(!msg.contains("127.0.0.1:"), "URL should not be repeated: {msg}");
        assert!(msg.to_ascii_lowercase().contains("refused"), "{msg}");
    }

    #[tokio::test]
    async fn the_host_allow_list_is_checked_on_every_hop_before_any_lookup() {
        let target = serve(|_| ok("model")).await;
        let hop = serve(move |_| redirect(302, &format!("http://127.0.0.2:{}/", target.port()))).await;
        let policy = Policy { allow_private: true, allow_exact: vec![], allow_hosts: Some(vec!["127.0.0.1".into()]) };
        let f = Fetcher::new(policy);
        assert_eq!(f.get(&format!("http://{target}/"), 1 << 20, Duration::from_secs(5)).await.unwrap(), b"model");
        let err = f.get(&format!("http://{hop}/"), 1 << 20, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(err, FetchError::HostNotAllowed(ref h) if h == "127.0.0.2"), "{err:?}");
        let err = f.get("http://never-resolved.invalid/", 1 << 20, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(err, FetchError::HostNotAllowed(_)), "{err:?}");
        let none = Fetcher::new(Policy { allow_hosts: Some(vec![]), ..Policy::default() });
        assert!(matches!(none.check_url("https://example.com/").await, Err(FetchError::HostNotAllowed(_))));
    }
}
