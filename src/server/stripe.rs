//! Stripe's side of billing: the configuration read from the environment
//! (secrets redacted in every `Debug`), and the form-encoded HTTPS calls to
//! its API with their failures described without a secret.

use crate::error::Error;
use axum::http::header;
use serde_json::Value;
use std::time::Duration;

/// Stripe's API when `STRIPE_API_BASE` is not set.
pub const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The plans sold through Checkout (free is not).
pub const PURCHASABLE: [&str; 3] = ["indie", "studio", "scale"];
/// How far a webhook's signed timestamp may be from our clock, either way.
pub const SIGNATURE_TOLERANCE_S: i64 = 300;
/// The webhook body cap (413 FILE_TOO_LARGE past it).
pub const WEBHOOK_MAX_BYTES: u64 = 1_000_000;
/// Timeout of one call to Stripe (connection, request and response).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// The cap on a Stripe answer (sessions and subscriptions are a few KB).
const STRIPE_MAX_RESPONSE: usize = 1 << 20;

// ---------------------------------------------------------------------------
// Configuration
// ---------------------------------------------------------------------------

/// Stripe settings from the environment ([`StripeConfig::from_env`]).
#[derive(Clone)]
pub struct StripeConfig {
    /// `STRIPE_SECRET_KEY` (`sk_...` or a restricted `rk_...`), sent as a Bearer token.
    pub secret_key: String,
    /// `STRIPE_WEBHOOK_SECRET` (`whsec_...`), the HMAC key of webhook signatures, used as-is.
    pub webhook_secret: String,
    /// The Price id of each purchasable plan (`STRIPE_PRICE_INDIE`, `_STUDIO`, `_SCALE`), in
    /// [`PURCHASABLE`] order; all different.
    pub prices: Vec<(&'static str, String)>,
    /// `STRIPE_API_BASE` without a trailing slash (default [`DEFAULT_API_BASE`]).
    pub api_base: String,
    /// Timeout of one call to Stripe ([`DEFAULT_TIMEOUT`]).
    pub timeout: Duration,
    /// The HTTP client (one per configuration, so its pool lives with the server).
    http: reqwest::Client,
}

impl PartialEq for StripeConfig {
    fn eq(&self, o: &Self) -> bool {
        (&self.secret_key, &self.webhook_secret, &self.prices, &self.api_base, self.timeout)
            == (&o.secret_key, &o.webhook_secret, &o.prices, &o.api_base, o.timeout)
    }
}

/// A secret for `Debug`: its well-known prefix (which tells test from live
/// mode) and nothing else.
pub(crate) fn redacted(secret: &str) -> String {
    let prefix = ["sk_test_", "sk_live_", "rk_test_", "rk_live_", "whsec_"].into_iter().find(|p| secret.starts_with(p));
    format!("{}[redacted]", prefix.unwrap_or(""))
}

impl std::fmt::Debug for StripeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeConfig")
            .field("secret_key", &redacted(&self.secret_key))
            .field("webhook_secret", &redacted(&self.webhook_secret))
            .field("prices", &self.prices)
            .field("api_base", &self.api_base)
            .field("timeout", &self.timeout)
            .finish()
    }
}

fn price_var(plan: &str) -> String {
    format!("STRIPE_PRICE_{}", plan.to_ascii_uppercase())
}

impl StripeConfig {
    /// Reads `STRIPE_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET`, `STRIPE_PRICE_INDIE`,
    /// `STRIPE_PRICE_STUDIO`, `STRIPE_PRICE_SCALE` and `STRIPE_API_BASE`.
    /// `None` when the secret key is unset or empty (billing off); an error
    /// naming the variable when the key is set but another one is missing or
    /// wrong.
    pub fn from_env() -> crate::error::Result<Option<StripeConfig>> {
        StripeConfig::resolve(&|k| std::env::var(k).ok())
    }

    /// [`StripeConfig::from_env`] over any source of variables.
    pub fn resolve(env: &dyn Fn(&str) -> Option<String>) -> crate::error::Result<Option<StripeConfig>> {
        let get = |k: &str| env(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let Some(secret_key) = get("STRIPE_SECRET_KEY") else { return Ok(None) };
        if secret_key.starts_with("pk_") {
            return Err(Error::bad_request(
                "STRIPE_SECRET_KEY holds a publishable key (pk_...); billing needs the secret key (sk_...) or a restricted key (rk_...)",
            ));
        }
        let need = |k: &str| {
            get(k).ok_or_else(|| {
                Error::bad_request(format!(
                    "STRIPE_SECRET_KEY is set but {k} is not; billing needs STRIPE_WEBHOOK_SECRET, STRIPE_PRICE_INDIE, STRIPE_PRICE_STUDIO and STRIPE_PRICE_SCALE (docs/billing.md)"
                ))
            })
        };
        let webhook_secret = need("STRIPE_WEBHOOK_SECRET")?;
        let mut prices: Vec<(&'static str, String)> = Vec::new();
        for plan in PURCHASABLE {
            let var = price_var(plan);
            let price = need(&var)?;
            if let Some((other, _)) = prices.iter().find(|(_, p)| *p == price) {
                return Err(Error::bad_request(format!(
                    "{var} and {} are both {price}; each plan needs its own Stripe price",
                    price_var(other)
                )));
            }
            prices.push((plan, price));
        }
        let api_base = get("STRIPE_API_BASE").unwrap_or_else(|| DEFAULT_API_BASE.to_string());
        let api_base = check_api_base(&api_base)?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("meshcheck/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::internal(format!("cannot build the Stripe HTTP client: {e}")))?;
        Ok(Some(StripeConfig { secret_key, webhook_secret, prices, api_base, timeout: DEFAULT_TIMEOUT, http }))
    }

    /// The Price id sold for `plan`.
    pub fn price_of(&self, plan: &str) -> Option<&str> {
        self.prices.iter().find(|(p, _)| *p == plan).map(|(_, price)| price.as_str())
    }

    /// The plan a Price id stands for.
    pub fn plan_of_price(&self, price: &str) -> Option<&'static str> {
        self.prices.iter().find(|(_, p)| p == price).map(|(plan, _)| *plan)
    }
}

/// `STRIPE_API_BASE`: an http(s) URL without query or fragment; plain http
/// only to a loopback host (the secret key travels in every request).
fn check_api_base(raw: &str) -> crate::error::Result<String> {
    let bad = |why: &str| Error::bad_request(format!("STRIPE_API_BASE={raw} {why}"));
    let url = url::Url::parse(raw).map_err(|e| bad(&format!("is not a URL: {e}")))?;
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must be a plain base URL (no query, fragment or credentials)"));
    }
    let loopback = match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    };
    match url.scheme() {
        "https" => {}
        "http" if loopback => {}
        "http" => return Err(bad("must use https (plain http is allowed for loopback test servers only)")),
        _ => return Err(bad("must be an http(s) URL")),
    }
    Ok(raw.trim_end_matches('/').to_string())
}

// ---------------------------------------------------------------------------
// Calls to Stripe
// ---------------------------------------------------------------------------

/// A failed call to Stripe: what it said (or why it could not be reached).
#[derive(Debug, Clone, Default)]
pub struct StripeFailure {
    /// HTTP status of Stripe's answer; `None` when there was none.
    pub status: Option<u16>,
    /// `error.type` (invalid_request_error, api_error, ...).
    pub kind: Option<String>,
    /// `error.code` (resource_missing, ...).
    pub code: Option<String>,
    /// `error.param`.
    pub param: Option<String>,
    /// `error.message`, or the network failure; secrets scrubbed.
    pub message: String,
}

impl StripeFailure {
    /// One line for logs and messages.
    pub fn describe(&self) -> String {
        match self.status {
            Some(s) => format!("Stripe answered HTTP {s}: {}", self.message),
            None => format!("Stripe could not be reached: {}", self.message),
        }
    }
}

/// `text` without the configured secrets, cut to 300 characters.
pub(crate) fn scrub(cfg: &StripeConfig, text: &str) -> String {
    let mut out = text.to_string();
    for secret in [&cfg.secret_key, &cfg.webhook_secret] {
        if !secret.is_empty() {
            out = out.replace(secret.as_str(), "[redacted]");
        }
    }
    if out.chars().count() > 300 {
        out = out.chars().take(300).collect::<String>() + "...";
    }
    out
}

fn network_failure(cfg: &StripeConfig, err: &reqwest::Error) -> StripeFailure {
    let message = if err.is_timeout() {
        format!("no answer within {} s", cfg.timeout.as_secs_f64())
    } else {
        let what = if err.is_connect() { "could not connect" } else { "request failed" };
        let mut cause: &dyn std::error::Error = err;
        while let Some(next) = cause.source() {
            cause = next;
        }
        format!("{what}: {cause}")
    };
    StripeFailure { message: scrub(cfg, &message), ..StripeFailure::default() }
}

impl StripeConfig {
    /// One call: `form` (if any) form-encoded, the key as a Bearer token; the
    /// JSON answer of a 2xx, else Stripe's `error` object.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        form: Option<&[(&str, String)]>,
    ) -> Result<Value, StripeFailure> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.api_base))
            .bearer_auth(&self.secret_key)
            .timeout(self.timeout)
            .header(header::ACCEPT, "application/json");
        if let Some(form) = form {
            let body = url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
                .finish();
            req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
        }
        let mut resp = req.send().await.map_err(|e| network_failure(self, &e))?;
        let status = resp.status().as_u16();
        let mut bytes = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| network_failure(self, &e))? {
            if bytes.len() + chunk.len() > STRIPE_MAX_RESPONSE {
                return Err(StripeFailure {
                    status: Some(status),
                    message: format!("the answer is larger than {STRIPE_MAX_RESPONSE} bytes"),
                    ..StripeFailure::default()
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        let json = serde_json::from_slice::<Value>(&bytes).ok();
        if (200..300).contains(&status) {
            return json.filter(Value::is_object).ok_or_else(|| StripeFailure {
                status: Some(status),
                message: "the answer is not a JSON object".into(),
                ..StripeFailure::default()
            });
        }
        let err = json.as_ref().and_then(|j| j.get("error"));
        let field = |k: &str| err.and_then(|e| e.get(k)).and_then(Value::as_str).map(|s| scrub(self, s));
        Err(StripeFailure {
            status: Some(status),
            kind: field("type"),
            code: field("code"),
            param: field("param"),
            message: field("message").unwrap_or_else(|| "no error message".into()),
        })
    }

    /// POST a form to `path`.
    pub async fn post(&self, path: &str, form: &[(&str, String)]) -> Result<Value, StripeFailure> {
        self.call(reqwest::Method::POST, path, Some(form)).await
    }

    /// GET `path`.
    pub async fn get(&self, path: &str) -> Result<Value, StripeFailure> {
        self.call(reqwest::Method::GET, path, None).await
    }
}
