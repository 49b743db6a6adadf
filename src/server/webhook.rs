//! Webhook signatures, the Standard Webhooks convention (DESIGN.md):
//! `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
//! keyed by the account's `webhook_secret` (`whsec_` + base64 key bytes;
//! ours are 32 base62 characters, which are valid base64 for 24 bytes).
//! [`verify`] is what a receiver runs; the tests use it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn key_bytes(secret: &str) -> Vec<u8> {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    STANDARD.decode(b64).unwrap_or_else(|_| b64.as_bytes().to_vec())
}

/// HMAC-SHA256 of `id.timestamp.body` under the secret's key.
fn mac(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(&key_bytes(secret)).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    mac.finalize().into_bytes().to_vec()
}

/// The `v1,...` signature of a message.
pub fn sign(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> String {
    format!("v1,{}", STANDARD.encode(mac(secret, id, timestamp, body)))
}

/// The headers of one attempt.
pub fn headers(secret: &str, id: &str, timestamp: i64, body: &[u8]) -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "application/json".into()),
        ("user-agent".into(), concat!("meshcheck/", env!("CARGO_PKG_VERSION")).into()),
        ("webhook-id".into(), id.into()),
        ("webhook-timestamp".into(), timestamp.to_string()),
        ("webhook-signature".into(), sign(secret, id, timestamp, body)),
    ]
}

/// Verifies a received message: one of the space-separated `v1,` signatures
/// matches (compared in constant time) and the timestamp is within
/// `tolerance_s` of `now`.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: i64,
    signatures: &str,
    body: &[u8],
    now: i64,
    tolerance_s: i64,
) -> bool {
    if (now - timestamp).abs() > tolerance_s {
        return false;
    }
    let expected = mac(secret, id, timestamp, body);
    signatures.split_whitespace().filter_map(|s| s.strip_prefix("v1,")).any(|s| {
        STANDARD.decode(s).is_ok_and(|got| {
            got.len() == expected.len() && got.iter().zip(expected.iter()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_standard_webhooks_reference_vector() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let ts = 1614265330;
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(sign(secret, id, ts, body), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(verify(secret, id, ts, &sign(secret, id, ts, body), body, ts + 10, 300));
        assert!(!verify(secret, id, ts, &sign(secret, id, ts, body), b"{}", ts, 300));
        assert!(!verify(secret, id, ts, &sign(secret, id, ts, body), body, ts + 301, 300));
    }
}
