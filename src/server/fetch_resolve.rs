//! Name resolution for outbound requests: resolved once per hop through a
//! [`NameResolver`] (the system's, or a fixed table in tests), then pinned so
//! the HTTP client never looks a name up itself (no DNS rebinding).

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;

/// Future returned by [`NameResolver::resolve`].
pub type ResolveFuture<'a> = Pin<Box<dyn Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>>;

/// Resolves a host name to socket addresses. Called exactly once per request hop.
///
/// The port of the returned addresses is ignored; the URL's port is used.
pub trait NameResolver: Send + Sync {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a>;
}

/// The operating system's resolver (`getaddrinfo` via `tokio::net::lookup_host`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl NameResolver for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// A fixed host → addresses table (case-insensitive). Unknown hosts fail to resolve.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    hosts: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder-style [`StaticResolver::insert`].
    pub fn with(mut self, host: &str, ips: impl IntoIterator<Item = IpAddr>) -> Self {
        self.insert(host, ips);
        self
    }

    pub fn insert(&mut self, host: &str, ips: impl IntoIterator<Item = IpAddr>) {
        self.hosts.insert(host.to_ascii_lowercase(), ips.into_iter().collect());
    }
}

impl NameResolver for StaticResolver {
    fn resolve<'a>(&'a self, host: &'a str, port: u16) -> ResolveFuture<'a> {
        let answer = match self.hosts.get(&host.to_ascii_lowercase()) {
            Some(ips) => Ok(ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect()),
            None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such host")),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// reqwest resolver that only ever hands out the addresses we already checked.
pub(crate) struct PinnedResolve {
    pub(crate) addrs: Vec<SocketAddr>,
}

impl reqwest::dns::Resolve for PinnedResolve {
    fn resolve(&self, _name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addrs: reqwest::dns::Addrs = Box::new(self.addrs.clone().into_iter());
        Box::pin(std::future::ready(Ok(addrs)))
    }
}
