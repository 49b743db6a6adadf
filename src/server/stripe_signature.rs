//! Stripe webhook signatures: parsing `Stripe-Signature`, HMAC-SHA256 over
//! `timestamp.body`, constant-time comparison and the replay window.

use super::stripe::SIGNATURE_TOLERANCE_S;
use hmac::{KeyInit, Mac};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

// ---------------------------------------------------------------------------
// Webhook signatures
// ---------------------------------------------------------------------------

/// Why a `Stripe-Signature` header was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureError {
    /// No header.
    Missing,
    /// The header cannot be read: no or several `t=`, a non-numeric `t`, no `v1=`.
    Malformed(&'static str),
    /// No `v1` signature matches the body.
    Mismatch,
    /// Authentic, but signed more than the tolerance away from now.
    Stale {
        /// The signed timestamp.
        timestamp: i64,
        /// Our clock.
        now: i64,
    },
}

impl SignatureError {
    /// The `reason` of the 400's detail.
    pub fn reason(&self) -> &'static str {
        match self {
            SignatureError::Missing => "missing",
            SignatureError::Malformed(_) => "malformed",
            SignatureError::Mismatch => "mismatch",
            SignatureError::Stale { .. } => "stale",
        }
    }
}

impl std::fmt::Display for SignatureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SignatureError::Missing => f.write_str("the Stripe-Signature header is missing"),
            SignatureError::Malformed(why) => write!(f, "the Stripe-Signature header is malformed: {why}"),
            SignatureError::Mismatch => f.write_str("no v1 signature in Stripe-Signature matches the body"),
            SignatureError::Stale { timestamp, now } => write!(
                f,
                "the Stripe-Signature timestamp {timestamp} is {} s away from the server's clock (tolerance {SIGNATURE_TOLERANCE_S} s)",
                (now - timestamp).abs()
            ),
        }
    }
}

/// A parsed `Stripe-Signature` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedSignature {
    /// `t=`, Unix seconds.
    pub timestamp: i64,
    /// Every `v1=` that is valid hex, decoded (other schemes such as `v0` are ignored).
    pub v1: Vec<Vec<u8>>,
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// Parses `t=<unix>,v1=<hex>[,v1=<hex>...]` (items in any order, spaces
/// around them ignored, unknown schemes skipped). A `v1` that is not hex
/// is kept out of the list (it could never match); at least one `v1` item
/// must be present.
pub fn parse_signature(header: &str) -> Result<ParsedSignature, SignatureError> {
    let mut timestamp = None;
    let mut v1 = Vec::new();
    let mut v1_items = 0;
    for item in header.split(',') {
        let Some((k, v)) = item.split_once('=') else { continue };
        match k.trim() {
            "t" => {
                if timestamp.is_some() {
                    return Err(SignatureError::Malformed("more than one t"));
                }
                let v = v.trim();
                if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(SignatureError::Malformed("t is not a Unix timestamp"));
                }
                timestamp = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed("t is out of range"))?);
            }
            "v1" => {
                v1_items += 1;
                v1.extend(hex_decode(v.trim()));
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed("no t"))?;
    if v1_items == 0 {
        return Err(SignatureError::Malformed("no v1 signature"));
    }
    Ok(ParsedSignature { timestamp, v1 })
}

/// HMAC-SHA256 of `"{timestamp}.{body}"` keyed by the whole secret string
/// (`whsec_...` bytes as they are), as Stripe signs.
fn mac(secret: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// A `Stripe-Signature` header for `body` at `timestamp`, as Stripe makes it
/// (for tests and local tooling).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    format!("t={timestamp},v1={}", crate::store::hex(&mac(secret, timestamp, body)))
}

fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Verifies a `Stripe-Signature` header: one `v1` matches (compared in
/// constant time), then the timestamp is within `tolerance_s` of `now`
/// either way.
pub fn verify(secret: &str, header: &str, body: &[u8], now: i64, tolerance_s: i64) -> Result<(), SignatureError> {
    let parsed = parse_signature(header)?;
    let expected = mac(secret, parsed.timestamp, body);
    if !parsed.v1.iter().fold(false, |found, sig| found | same(sig, &expected)) {
        return Err(SignatureError::Mismatch);
    }
    if (now - parsed.timestamp).abs() > tolerance_s {
        return Err(SignatureError::Stale { timestamp: parsed.timestamp, now });
    }
    Ok(())
}
