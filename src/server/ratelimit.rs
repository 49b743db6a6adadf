//! Token buckets: one per API key (capacity = the plan's rate per minute,
//! refilled evenly over the minute) and one per client IP on the public and
//! demo routes (DESIGN.md). Written here rather than with governor because
//! the buckets read the service's injectable [`Clock`](super::clock::Clock)
//! (tests move time to show recovery) and the RateLimit-* headers need the
//! remaining tokens and the time to a full bucket, which is a few lines of
//! arithmetic on our own state. With a shared store (PostgreSQL) the same
//! arithmetic runs on a row per bucket, read and written atomically, so every
//! node draws from one bucket.

use crate::store::Bucket;
use std::collections::HashMap;
use std::sync::Mutex;

/// One decision, with what the RateLimit-* headers report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request may proceed (a token was taken).
    pub allowed: bool,
    /// Bucket capacity (requests per minute).
    pub limit: u64,
    /// Whole tokens left after this request.
    pub remaining: u64,
    /// Seconds until the bucket is full again.
    pub reset_s: u64,
    /// Seconds until one token is available (0 when allowed).
    pub retry_after_s: u64,
}

const UNIT: i64 = 60_000;

/// Takes a token from a bucket of `per_min` capacity at `now_ms`, in exact
/// integer units: one token is 60,000 units and a bucket of capacity C
/// refills C units per millisecond (C tokens per minute). `old` is the
/// bucket's state (`None`: a new, full bucket); returns its new state.
pub fn step(old: Option<Bucket>, per_min: u64, now_ms: i64) -> (Bucket, Decision) {
    let rate = per_min.max(1) as i64;
    let cap = rate * UNIT;
    let mut b = old.unwrap_or(Bucket { units: cap, at_ms: now_ms });
    let elapsed = (now_ms - b.at_ms).max(0);
    b.units = b.units.saturating_add(elapsed.saturating_mul(rate)).min(cap);
    b.at_ms = now_ms.max(b.at_ms);
    let allowed = b.units >= UNIT;
    if allowed {
        b.units -= UNIT;
    }
    let ms_to = |units: i64| (units.max(0) + rate - 1) / rate;
    let secs = |ms: i64| ((ms + 999) / 1000) as u64;
    let decision = Decision {
        allowed,
        limit: per_min,
        remaining: (b.units / UNIT) as u64,
        reset_s: secs(ms_to(cap - b.units)),
        retry_after_s: if allowed { 0 } else { secs(ms_to(UNIT - b.units)).max(1) },
    };
    (b, decision)
}

/// Many buckets in this process, keyed by key hash or client IP (a
/// single-node store; a shared store keeps them as rows instead, see
/// [`AppState::take`](super::state::AppState::take)).
#[derive(Debug, Default)]
pub struct Limiter {
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// Buckets kept before full ones are pruned.
const PRUNE_AT: usize = 50_000;

/// Buckets untouched this long are full again (capacity refills in a
/// minute) and may be forgotten.
pub const FULL_AFTER_MS: i64 = 60_000;

impl Limiter {
    /// Takes a token from `key`'s bucket of `per_min` capacity at time `now_ms`.
    pub fn take(&self, key: &str, per_min: u64, now_ms: i64) -> Decision {
        let mut map = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= PRUNE_AT {
            map.retain(|_, b| now_ms - b.at_ms < FULL_AFTER_MS);
        }
        let (b, decision) = step(map.get(key).copied(), per_min, now_ms);
        map.insert(key.to_string(), b);
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_empties_and_refills_evenly() {
        let l = Limiter::default();
        for i in 0..10 {
            let d = l.take("k", 10, 0);
            assert!(d.allowed);
            assert_eq!(d.remaining, 9 - i);
        }
        let d = l.take("k", 10, 0);
        assert!(!d.allowed);
        assert_eq!(d.retry_after_s, 6, "one token per 6 s");
        assert!(!l.take("k", 10, 5_000).allowed);
        assert!(l.take("k", 10, 6_000).allowed);
        assert!(l.take("other", 10, 6_000).allowed, "buckets are per key");
        let d = l.take("k", 10, 6_000 + 60_000);
        assert!(d.allowed);
        assert_eq!(d.remaining, 9, "refills to capacity, no more");
    }
}
