//! Billing with Stripe's HTTP API (docs/billing.md is the full story).
//!
//! - POST /v1/billing/checkout `{plan}` creates a subscription-mode Checkout
//!   Session naming the account and answers `{url}`.
//! - POST /v1/billing/portal answers a Customer Portal `{url}` (404 while the
//!   account has no Stripe customer).
//! - POST /v1/billing/webhook verifies `Stripe-Signature` and applies
//!   `checkout.session.completed` (and `checkout.session.async_payment_succeeded`),
//!   `customer.subscription.created`, `.updated` and `.deleted` to the account,
//!   each event id once.
//!
//! Stripe is reached with plain form-encoded HTTPS requests (reqwest, no SDK)
//! at `STRIPE_API_BASE`, so tests point it at a fake on 127.0.0.1. Without
//! `STRIPE_SECRET_KEY` every route answers 503 BILLING_UNAVAILABLE.
//!
//! Plan changes apply at once: the balance is always the current plan's
//! monthly credits minus the credits used in the current period (periods
//! count from the account's creation, not from Stripe's billing cycle), and
//! the rate limit and size limit are read from the plan on every request.
//!
//! Secrets never reach a log line, an error message or `Debug` output, and
//! the raw webhook body is never logged.

use super::auth::Caller;
use super::error::{ApiError, ApiResult};
use super::state::AppState;
use super::stripe::StripeFailure;
pub use super::stripe::{
    DEFAULT_API_BASE, DEFAULT_TIMEOUT, PURCHASABLE, SIGNATURE_TOLERANCE_S, StripeConfig, WEBHOOK_MAX_BYTES,
};
pub use super::stripe_signature::{ParsedSignature, SignatureError, parse_signature, sign, verify};
use crate::error::{Error, ErrorCode};
use crate::store::Account;
use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The checkout body cap; `{plan}` is a few bytes.
const CHECKOUT_MAX_BYTES: u64 = 16 << 10;
/// Subscription statuses that keep the paid plan (past_due: Stripe is still
/// retrying the payment).
const LIVE_STATUSES: [&str; 3] = ["active", "trialing", "past_due"];
/// Subscription statuses that end the paid plan.
const ENDED_STATUSES: [&str; 4] = ["canceled", "unpaid", "incomplete_expired", "paused"];

/// The configuration, or 503 BILLING_UNAVAILABLE.
fn configured(state: &AppState) -> ApiResult<&StripeConfig> {
    state.config.stripe.as_ref().ok_or_else(|| {
        ApiError::new(
            ErrorCode::BillingUnavailable,
            "billing is not configured on this server (STRIPE_SECRET_KEY is not set)",
        )
    })
}

/// 503 BILLING_UNAVAILABLE for a failed call, logged (never with a secret).
fn unavailable(what: &str, f: &StripeFailure) -> ApiError {
    tracing::warn!(
        what,
        stripe_status = f.status,
        stripe_type = f.kind.as_deref(),
        stripe_code = f.code.as_deref(),
        message = %f.message,
        "Stripe call failed"
    );
    ApiError::new(ErrorCode::BillingUnavailable, format!("{what}: {}", f.describe())).detail(json!({
        "stripe_status": f.status,
        "stripe_error": f.kind,
        "stripe_code": f.code,
    }))
}

/// The `url` of a created session, which must be an http(s) URL.
fn session_url(what: &str, session: &Value) -> ApiResult<String> {
    session
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| url::Url::parse(u).is_ok_and(|u| matches!(u.scheme(), "https" | "http")))
        .map(str::to_string)
        .ok_or_else(|| {
            unavailable(
                what,
                &StripeFailure { status: Some(200), message: "the answer has no url".into(), ..Default::default() },
            )
        })
}

// ---------------------------------------------------------------------------
// Request bodies
// ---------------------------------------------------------------------------

enum BodyError {
    TooLarge,
    Read(String),
}

/// Reads a request body up to `cap` bytes.
async fn read_body(body: Body, headers: &HeaderMap, cap: u64) -> Result<bytes::Bytes, BodyError> {
    use http_body_util::BodyExt;
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap) {
        return Err(BodyError::TooLarge);
    }
    match http_body_util::Limited::new(body, cap as usize).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<http_body_util::LengthLimitError>().is_some() => Err(BodyError::TooLarge),
        Err(e) => Err(BodyError::Read(e.to_string())),
    }
}

/// The plan of a checkout body: a JSON object with exactly one field,
/// `plan`, naming a purchasable plan.
pub fn parse_checkout(body: &[u8]) -> crate::error::Result<&'static str> {
    let example = r#"send a JSON body such as {"plan": "indie"} (indie, studio or scale)"#;
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::field("plan", "missing", format!("plan is required: {example}")));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::field("body", "invalid JSON", format!("the body is not valid JSON ({e}); {example}")))?;
    let Value::Object(map) = value else {
        return Err(Error::field("body", "not an object", format!("the body must be a JSON object; {example}")));
    };
    if let Some(k) = map.keys().find(|k| *k != "plan") {
        return Err(Error::field(k, "unknown field", format!("unknown field {k:?}: the body takes only plan")));
    }
    match map.get("plan") {
        None | Some(Value::Null) => Err(Error::field("plan", "missing", format!("plan is required: {example}"))),
        Some(Value::String(p)) if p == "free" => Err(Error::field(
            "plan",
            "not purchasable",
            "the free plan cannot be bought; choose indie, studio or scale (to go back to free, cancel the subscription in the customer portal)",
        )),
        Some(Value::String(p)) => PURCHASABLE.into_iter().find(|x| x == p).ok_or_else(|| {
            Error::field("plan", "enum", format!("plan must be one of indie, studio or scale; got {p:?}"))
        }),
        Some(other) => {
            Err(Error::field("plan", "enum", format!("plan must be the string indie, studio or scale; got {other}")))
        }
    }
}

// ---------------------------------------------------------------------------
// POST /v1/billing/checkout and /v1/billing/portal
// ---------------------------------------------------------------------------

/// Where Checkout sends the customer after paying.
pub fn success_url(base_url: &str) -> String {
    format!("{base_url}/?billing=success")
}

/// Where Checkout sends the customer who gives up.
pub fn cancel_url(base_url: &str) -> String {
    format!("{base_url}/?billing=cancelled")
}

/// Where the Customer Portal's "return" link goes.
pub fn return_url(base_url: &str) -> String {
    format!("{base_url}/")
}

/// POST /v1/billing/checkout `{plan}`: 200 `{url}` of a Stripe Checkout page
/// for a subscription to that plan. The configuration is checked first (503
/// BILLING_UNAVAILABLE on a server without billing, whatever the body), then
/// the body (400), then whether the account already has a subscription (400
/// `already subscribed`: plan changes go through the portal, so nobody pays
/// twice).
pub async fn checkout(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    // The body first: a client mistake is 400 whether or not billing is configured.
    let bytes = read_body(body, &headers, CHECKOUT_MAX_BYTES).await.map_err(|e| match e {
        BodyError::TooLarge => {
            Error::field("body", "too large", format!("the body is larger than {CHECKOUT_MAX_BYTES} bytes"))
        }
        BodyError::Read(why) => Error::field("body", "unreadable", format!("could not read the body: {why}")),
    })?;
    let plan = parse_checkout(&bytes)?;
    let cfg = configured(&state)?;
    let account = &caller.account;
    if let (Some(_), Some(sub)) = (&account.subscription_provider, &account.subscription_id) {
        return Err(Error::field(
            "plan",
            "already subscribed",
            format!(
                "this account already has an active subscription ({sub}, plan {}); change or cancel it in the customer portal (POST /v1/billing/portal)",
                account.plan
            ),
        )
        .into());
    }
    let price = cfg.price_of(plan).ok_or_else(|| ApiError::internal(format!("no Stripe price for plan {plan}")))?;
    let base = &state.config.base_url;
    let mut form: Vec<(&str, String)> = vec![
        ("mode", "subscription".into()),
        ("line_items[0][price]", price.into()),
        ("line_items[0][quantity]", "1".into()),
        ("client_reference_id", account.id.clone()),
        ("metadata[account_id]", account.id.clone()),
        ("metadata[plan]", plan.into()),
        ("subscription_data[metadata][account_id]", account.id.clone()),
        ("subscription_data[metadata][plan]", plan.into()),
        ("success_url", success_url(base)),
        ("cancel_url", cancel_url(base)),
    ];
    match (&account.customer_id, &account.email) {
        (Some(customer), _) => form.push(("customer", customer.clone())),
        (None, Some(email)) => form.push(("customer_email", email.clone())),
        (None, None) => {}
    }
    let what = "could not create a Stripe Checkout session";
    let session = cfg.post("/v1/checkout/sessions", &form).await.map_err(|f| unavailable(what, &f))?;
    let url = session_url(what, &session)?;
    let session_id = session.get("id").and_then(Value::as_str).unwrap_or("?");
    tracing::info!(account = %account.id, plan, session = session_id, "Stripe Checkout session created");
    Ok(axum::Json(json!({ "url": url })).into_response())
}

/// POST /v1/billing/portal: 200 `{url}` of a Stripe Customer Portal session;
/// 404 NOT_FOUND while the account has no Stripe customer (or Stripe no
/// longer knows it). Any body is ignored.
pub async fn portal(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> ApiResult<Response> {
    let cfg = configured(&state)?;
    let Some(customer) = caller.account.customer_id.as_deref() else {
        return Err(ApiError::not_found(
            "this account has no payment customer yet; subscribe first with POST /v1/billing/checkout",
        ));
    };
    let form = [("customer", customer.to_string()), ("return_url", return_url(&state.config.base_url))];
    let what = "could not create a Stripe Customer Portal session";
    let session = match cfg.post("/v1/billing_portal/sessions", &form).await {
        Ok(s) => s,
        Err(f) if f.code.as_deref() == Some("resource_missing") && f.param.as_deref() == Some("customer") => {
            tracing::warn!(account = %caller.account.id, customer, "Stripe does not know the account's customer");
            return Err(ApiError::not_found(format!(
                "the account's payment customer ({customer}) no longer exists at Stripe; subscribe again with POST /v1/billing/checkout"
            )));
        }
        Err(f) => return Err(unavailable(what, &f)),
    };
    let url = session_url(what, &session)?;
    Ok(axum::Json(json!({ "url": url })).into_response())
}

// ---------------------------------------------------------------------------
// Webhook events
// ---------------------------------------------------------------------------

/// What an event asks of the account.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// The paid `plan` through this subscription. A checkout may replace
    /// another current subscription; a subscription event only updates the
    /// account's own (or sets one on an account without).
    Subscribe { plan: &'static str, from_checkout: bool },
    /// Checkout finished but the payment is pending: remember the customer only.
    CustomerOnly,
    /// The subscription ended: back to free (the customer stays, for the portal).
    End,
}

/// An event reduced to what it changes.
#[derive(Debug, Clone, PartialEq)]
struct Change {
    /// The account named by the event (client_reference_id / metadata.account_id).
    account_hint: Option<String>,
    /// `cus_...`.
    customer: Option<String>,
    /// `sub_...`.
    subscription: String,
    target: Target,
}

/// How an event ended.
#[derive(Debug, Clone, PartialEq)]
enum EventOutcome {
    Applied(String),
    Ignored(String),
    Duplicate,
}

/// A Stripe id (a string, or an expanded object's `id`): ASCII letters,
/// digits and `_`, at most 255.
fn id_of(v: Option<&Value>) -> Option<String> {
    let v = v?;
    let s = v.as_str().or_else(|| v.get("id").and_then(Value::as_str))?;
    (!s.is_empty() && s.len() <= 255 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
        .then(|| s.to_string())
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(*k))?.as_str()
}

/// The plan of a subscription object: the first item whose price is one of
/// ours; `Err` names the prices when none is.
fn plan_of_subscription(cfg: &StripeConfig, sub: &Value) -> Result<&'static str, String> {
    let items = sub.get("items").and_then(|i| i.get("data")).and_then(Value::as_array);
    let prices: Vec<String> = items
        .into_iter()
        .flatten()
        .filter_map(|item| id_of(item.get("price")).or_else(|| id_of(item.get("plan"))))
        .collect();
    prices.iter().find_map(|p| cfg.plan_of_price(p)).ok_or_else(|| {
        if prices.is_empty() {
            "the subscription has no price".to_string()
        } else {
            format!("price {} is not one of the configured plan prices", prices.join(", "))
        }
    })
}

/// checkout.session.completed / .async_payment_succeeded. Fetches the
/// subscription from Stripe only when the session lacks our
/// `metadata[plan]` (a session not made by this server); a failed fetch is
/// 503, so Stripe delivers the event again.
async fn checkout_change(cfg: &StripeConfig, kind: &str, obj: &Value) -> ApiResult<Result<Change, String>> {
    let mode = str_at(obj, &["mode"]).unwrap_or("?");
    if mode != "subscription" {
        return Ok(Err(format!("the checkout session is in {mode} mode, not subscription")));
    }
    let Some(subscription) = id_of(obj.get("subscription")) else {
        return Ok(Err("the checkout session has no subscription".into()));
    };
    let account_hint =
        str_at(obj, &["client_reference_id"]).or_else(|| str_at(obj, &["metadata", "account_id"])).map(str::to_string);
    let customer = id_of(obj.get("customer"));
    if kind == "checkout.session.completed" && str_at(obj, &["payment_status"]) == Some("unpaid") {
        return Ok(Ok(Change { account_hint, customer, subscription, target: Target::CustomerOnly }));
    }
    let plan = match str_at(obj, &["metadata", "plan"]).and_then(|p| PURCHASABLE.into_iter().find(|x| *x == p)) {
        Some(p) => p,
        None => {
            let what = "could not read the subscription of a completed checkout";
            let sub = cfg.get(&format!("/v1/subscriptions/{subscription}")).await.map_err(|f| unavailable(what, &f))?;
            match plan_of_subscription(cfg, &sub) {
                Ok(p) => p,
                Err(why) => {
                    tracing::warn!(subscription, "checkout completed for an unknown price: {why}");
                    return Ok(Err(why));
                }
            }
        }
    };
    Ok(Ok(Change { account_hint, customer, subscription, target: Target::Subscribe { plan, from_checkout: true } }))
}

/// customer.subscription.created / .updated / .deleted.
fn subscription_change(cfg: &StripeConfig, kind: &str, obj: &Value) -> Result<Change, String> {
    let Some(subscription) = id_of(obj.get("id")) else {
        return Err("the subscription has no id".into());
    };
    let account_hint = str_at(obj, &["metadata", "account_id"]).map(str::to_string);
    let customer = id_of(obj.get("customer"));
    let change = |target| {
        Ok(Change {
            account_hint: account_hint.clone(),
            customer: customer.clone(),
            subscription: subscription.clone(),
            target,
        })
    };
    if kind == "customer.subscription.deleted" {
        return change(Target::End);
    }
    let status = str_at(obj, &["status"]).unwrap_or("");
    if LIVE_STATUSES.contains(&status) {
        match plan_of_subscription(cfg, obj) {
            Ok(plan) => change(Target::Subscribe { plan, from_checkout: false }),
            Err(why) => {
                tracing::warn!(subscription, "subscription event ignored: {why}");
                Err(why)
            }
        }
    } else if ENDED_STATUSES.contains(&status) {
        change(Target::End)
    } else if status == "incomplete" {
        Err("the subscription is incomplete (waiting for its first payment)".into())
    } else {
        Err(format!("unknown subscription status {status:?}"))
    }
}

/// The account an event names: its hint when that account exists, else the
/// one holding the subscription, else the customer.
fn find_account(state: &AppState, ch: &Change) -> crate::error::Result<Option<Account>> {
    if let Some(id) = &ch.account_hint
        && let Some(a) = state.store.account(id)?
    {
        return Ok(Some(a));
    }
    state.store.account_by_billing(ch.customer.as_deref(), Some(&ch.subscription))
}

/// Applies a change to its account (guarded against stale subscriptions).
fn apply(state: &AppState, ch: &Change) -> crate::error::Result<EventOutcome> {
    let Some(account) = find_account(state, ch)? else {
        tracing::warn!(
            subscription = %ch.subscription,
            customer = ch.customer.as_deref(),
            hint = ch.account_hint.as_deref(),
            "Stripe event for no known account; acknowledged and ignored"
        );
        return Ok(EventOutcome::Ignored("no account matches this event".into()));
    };
    let current = account.subscription_provider.as_ref().and(account.subscription_id.as_deref());
    let sub = ch.subscription.as_str();
    let customer = ch.customer.as_deref();
    let (plan, provider, subscription) = match ch.target {
        Target::Subscribe { from_checkout: true, .. } if current == Some(sub) => {
            return Ok(EventOutcome::Ignored(format!("subscription {sub} is already the account's")));
        }
        Target::Subscribe { from_checkout: false, .. } if current.is_some_and(|c| c != sub) => {
            return Ok(EventOutcome::Ignored(format!("subscription {sub} is not the account's current subscription")));
        }
        Target::Subscribe { plan, .. } => (plan, Some("stripe"), Some(sub)),
        Target::CustomerOnly => {
            state.store.set_billing(
                &account.id,
                &account.plan,
                customer,
                account.subscription_provider.as_deref(),
                account.subscription_id.as_deref(),
            )?;
            tracing::info!(account = %account.id, "checkout completed with the payment pending: customer recorded");
            return Ok(EventOutcome::Applied("payment pending: customer recorded, plan unchanged".into()));
        }
        Target::End if current != Some(sub) => {
            return Ok(EventOutcome::Ignored(format!("subscription {sub} is not the account's current subscription")));
        }
        Target::End => ("free", None, None),
    };
    state.store.set_billing(&account.id, plan, customer, provider, subscription)?;
    tracing::info!(account = %account.id, from = %account.plan, to = plan, subscription = sub, "billing applied");
    Ok(EventOutcome::Applied(format!("plan {plan}")))
}

/// Verifies, de-duplicates and applies one event.
async fn handle(state: &AppState, cfg: &StripeConfig, id: &str, kind: &str, obj: &Value) -> ApiResult<EventOutcome> {
    let change = match kind {
        "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
            checkout_change(cfg, kind, obj).await?
        }
        "customer.subscription.created" | "customer.subscription.updated" | "customer.subscription.deleted" => {
            subscription_change(cfg, kind, obj)
        }
        _ => return Ok(EventOutcome::Ignored(format!("meshcheck does not use {kind} events"))),
    };
    let change = match change {
        Ok(c) => c,
        Err(why) => return Ok(EventOutcome::Ignored(why)),
    };
    // Recorded before applying: a redelivery is never applied twice. What
    // can fail for a passing reason (a call to Stripe) ran above, so only a
    // database failure here loses an event (logged as INTERNAL).
    if !state.store.first_billing_event(id, kind, state.clock.now())? {
        return Ok(EventOutcome::Duplicate);
    }
    Ok(apply(state, &change)?)
}

/// POST /v1/billing/webhook: Stripe's events, verified by `Stripe-Signature`
/// (400 BAD_REQUEST with `{field: "Stripe-Signature", reason}` otherwise;
/// 413 past 1 MB; 503 without billing). Answers 200 `{received: true,
/// result: "applied" | "ignored" | "duplicate", reason?}` to every
/// authentic event, so Stripe stops sending it.
pub async fn webhook(State(state): State<AppState>, headers: HeaderMap, body: Body) -> ApiResult<Response> {
    let cfg = configured(&state)?;
    let bytes = read_body(body, &headers, WEBHOOK_MAX_BYTES).await.map_err(|e| match e {
        BodyError::TooLarge => {
            let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse().ok());
            ApiError::too_large(declared.unwrap_or(WEBHOOK_MAX_BYTES + 1), WEBHOOK_MAX_BYTES, "the webhook body")
        }
        BodyError::Read(why) => Error::bad_request(format!("could not read the webhook body: {why}")).into(),
    })?;
    let checked = match headers.get("stripe-signature") {
        None => Err(SignatureError::Missing),
        Some(v) => match v.to_str() {
            Ok(h) => verify(&cfg.webhook_secret, h, &bytes, state.clock.now(), SIGNATURE_TOLERANCE_S),
            Err(_) => Err(SignatureError::Malformed("not ASCII")),
        },
    };
    if let Err(e) = checked {
        tracing::warn!(reason = e.reason(), "Stripe webhook refused: {e}");
        return Err(Error::field("Stripe-Signature", e.reason(), e.to_string()).into());
    }
    let event: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::field("body", "invalid JSON", format!("the event is not valid JSON: {e}")))?;
    let (Some(id), Some(kind), Some(obj)) = (
        event.get("id").and_then(Value::as_str),
        event.get("type").and_then(Value::as_str),
        event.get("data").and_then(|d| d.get("object")).filter(|o| o.is_object()),
    ) else {
        return Err(
            Error::field("body", "not an event", "the body is not a Stripe event {id, type, data.object}").into()
        );
    };
    let outcome = handle(&state, cfg, id, kind, obj).await?;
    let body = match &outcome {
        EventOutcome::Applied(what) => {
            tracing::info!(event = id, kind, "Stripe event applied: {what}");
            json!({"received": true, "result": "applied"})
        }
        EventOutcome::Ignored(why) => {
            tracing::info!(event = id, kind, "Stripe event ignored: {why}");
            json!({"received": true, "result": "ignored", "reason": why})
        }
        EventOutcome::Duplicate => {
            tracing::info!(event = id, kind, "Stripe event already applied");
            json!({"received": true, "result": "duplicate"})
        }
    };
    Ok(axum::Json(body).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::stripe::{redacted, scrub};
    use std::collections::HashMap;
    use std::time::Duration;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    const FULL: [(&str, &str); 5] = [
        ("STRIPE_SECRET_KEY", "sk_test_abc123"),
        ("STRIPE_WEBHOOK_SECRET", "whsec_xyz789"),
        ("STRIPE_PRICE_INDIE", "price_i"),
        ("STRIPE_PRICE_STUDIO", "price_s"),
        ("STRIPE_PRICE_SCALE", "price_c"),
    ];

    #[test]
    fn configuration_comes_from_the_environment() {
        assert!(StripeConfig::resolve(&env(&[])).unwrap().is_none());
        assert!(StripeConfig::resolve(&env(&[("STRIPE_SECRET_KEY", "  ")])).unwrap().is_none());
        let c = StripeConfig::resolve(&env(&FULL)).unwrap().unwrap();
        assert_eq!(c.api_base, "https://api.stripe.com");
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!((c.price_of("studio"), c.plan_of_price("price_c")), (Some("price_s"), Some("scale")));
        assert_eq!((c.price_of("free"), c.plan_of_price("price_x")), (None, None));
        for missing in ["STRIPE_WEBHOOK_SECRET", "STRIPE_PRICE_INDIE", "STRIPE_PRICE_STUDIO", "STRIPE_PRICE_SCALE"] {
            let partial: Vec<_> = FULL.iter().copied().filter(|(k, _)| *k != missing).collect();
            let e = StripeConfig::resolve(&env(&partial)).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadRequest);
            assert!(e.message.contains(&format!("but {missing} is not")), "{}", e.message);
        }
        let mut same = FULL.to_vec();
        same[4] = ("STRIPE_PRICE_SCALE", "price_i");
        let e = StripeConfig::resolve(&env(&same)).unwrap_err();
        assert!(e.message.contains("STRIPE_PRICE_SCALE and STRIPE_PRICE_INDIE"), "{}", e.message);
        let mut pk = FULL.to_vec();
        pk[0] = ("STRIPE_SECRET_KEY", "pk_test_123");
        assert!(StripeConfig::resolve(&env(&pk)).unwrap_err().message.contains("publishable"));
        for (base, ok) in [
            ("http://127.0.0.1:4242/", Some("http://127.0.0.1:4242")),
            ("http://localhost:12111", Some("http://localhost:12111")),
            ("https://stripe.internal.example", Some("https://stripe.internal.example")),
            ("http://stripe.example", None),
            ("ftp://127.0.0.1", None),
            ("https://api.stripe.com/?x=1", None),
            ("not a url", None),
        ] {
            let mut v = FULL.to_vec();
            v.push(("STRIPE_API_BASE", base));
            let got = StripeConfig::resolve(&env(&v));
            assert_eq!(got.as_ref().ok().map(|c| c.as_ref().unwrap().api_base.as_str()), ok, "{base}");
            if let Err(e) = got {
                assert!(e.message.contains("STRIPE_API_BASE"), "{}", e.message);
            }
        }
    }

    #[test]
    fn debug_output_hides_the_secrets() {
        let c = StripeConfig::resolve(&env(&FULL)).unwrap().unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("abc123") && !shown.contains("xyz789"), "{shown}");
        assert!(shown.contains("sk_test_[redacted]") && shown.contains("whsec_[redacted]"), "{shown}");
        assert!(shown.contains("price_i"), "{shown}");
        assert_eq!(redacted("mysecret"), "[redacted]");
        assert_eq!(scrub(&c, "Invalid API Key provided: sk_test_abc123"), "Invalid API Key provided: [redacted]");
    }

    #[test]
    fn the_signature_header_parses() {
        let a = "a".repeat(64);
        let b = "0b".repeat(32);
        let p = parse_signature(&format!("t=1700000000,v1={a},v0=ffff,v1={b}")).unwrap();
        assert_eq!(p.timestamp, 1_700_000_000);
        assert_eq!(p.v1, vec![vec![0xaa; 32], vec![0x0b; 32]], "every v1, in order; v0 ignored");
        let p = parse_signature(&format!(" v1 = {a} , t = 42 ")).unwrap();
        assert_eq!((p.timestamp, p.v1.len()), (42, 1), "any order, spaces ignored");
        let p = parse_signature("t=1,v1=zz,v1=abc").unwrap();
        assert!(p.v1.is_empty(), "non-hex v1 values can never match");
        assert_eq!(parse_signature(&format!("v1={a}")), Err(SignatureError::Malformed("no t")));
        assert_eq!(parse_signature("t=1,v0=aa"), Err(SignatureError::Malformed("no v1 signature")));
        assert_eq!(parse_signature("t=1"), Err(SignatureError::Malformed("no v1 signature")));
        assert_eq!(parse_signature(""), Err(SignatureError::Malformed("no t")));
        assert_eq!(parse_signature("garbage"), Err(SignatureError::Malformed("no t")));
        assert_eq!(
            parse_signature(&format!("t=-5,v1={a}")),
            Err(SignatureError::Malformed("t is not a Unix timestamp"))
        );
        assert_eq!(
            parse_signature(&format!("t=12a,v1={a}")),
            Err(SignatureError::Malformed("t is not a Unix timestamp"))
        );
        assert_eq!(parse_signature(&format!("t=,v1={a}")), Err(SignatureError::Malformed("t is not a Unix timestamp")));
        assert_eq!(
            parse_signature(&format!("t=99999999999999999999,v1={a}")),
            Err(SignatureError::Malformed("t is out of range"))
        );
        assert_eq!(parse_signature(&format!("t=1,t=2,v1={a}")), Err(SignatureError::Malformed("more than one t")));
    }

    #[test]
    fn signatures_match_an_independent_vector() {
        // python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_meshcheck_fixed_vector",
        //   b"1700000000.{\"id\":\"evt_fixed\",\"type\":\"ping\"}", hashlib.sha256).hexdigest())'
        const EXPECTED: &str = "2425c778b970bf43015449c6d7385c9e0b6280da3e0cb3d2b6408abb0713fe4b";
        let secret = "whsec_meshcheck_fixed_vector";
        let body = br#"{"id":"evt_fixed","type":"ping"}"#;
        assert_eq!(sign(secret, 1_700_000_000, body), format!("t=1700000000,v1={EXPECTED}"));
        let ok = format!("t=1700000000,v1={},v1={EXPECTED}", "00".repeat(32));
        assert_eq!(verify(secret, &ok, body, 1_700_000_000, 300), Ok(()), "any v1 may match");
        assert_eq!(verify(secret, &ok, body, 1_700_000_300, 300), Ok(()));
        assert_eq!(verify(secret, &ok, body, 1_699_999_700, 300), Ok(()));
        assert_eq!(
            verify(secret, &ok, body, 1_700_000_301, 300),
            Err(SignatureError::Stale { timestamp: 1_700_000_000, now: 1_700_000_301 })
        );
        assert_eq!(verify(secret, &ok, b"{}", 1_700_000_000, 300), Err(SignatureError::Mismatch));
        assert_eq!(verify("whsec_other", &ok, body, 1_700_000_000, 300), Err(SignatureError::Mismatch));
        let shifted = format!("t=1700000001,v1={EXPECTED}");
        assert_eq!(verify(secret, &shifted, body, 1_700_000_000, 300), Err(SignatureError::Mismatch));
        let upper = format!("t=1700000000,v1={}", EXPECTED.to_uppercase());
        assert_eq!(verify(secret, &upper, body, 1_700_000_000, 300), Ok(()), "hex in either case");
    }

    #[test]
    fn checkout_bodies() {
        assert_eq!(parse_checkout(br#"{"plan":"studio"}"#).unwrap(), "studio");
        let reason = |b: &[u8]| {
            let e = parse_checkout(b).unwrap_err();
            assert_eq!(e.code, ErrorCode::BadRequest);
            let d = e.detail.unwrap();
            (d["field"].as_str().unwrap().to_string(), d["reason"].as_str().unwrap().to_string())
        };
        let pair = |f: &str, r: &str| (f.to_string(), r.to_string());
        assert_eq!(reason(br#"{"plan":"free"}"#), pair("plan", "not purchasable"));
        assert_eq!(reason(br#"{"plan":"gold"}"#), pair("plan", "enum"));
        assert_eq!(reason(br#"{"plan":"Indie"}"#), pair("plan", "enum"));
        assert_eq!(reason(br#"{"plan":3}"#), pair("plan", "enum"));
        assert_eq!(reason(br#"{"plan":null}"#), pair("plan", "missing"));
        assert_eq!(reason(b"{}"), pair("plan", "missing"));
        assert_eq!(reason(b" \n"), pair("plan", "missing"));
        assert_eq!(reason(br#"{"plan":"indie","seats":2}"#), pair("seats", "unknown field"));
        assert_eq!(reason(br#"["indie"]"#), pair("body", "not an object"));
        assert_eq!(reason(b"plan=indie"), pair("body", "invalid JSON"));
    }

    #[test]
    fn ids_are_plain() {
        assert_eq!(id_of(Some(&json!("sub_1A"))), Some("sub_1A".into()));
        assert_eq!(id_of(Some(&json!({"id": "cus_9", "object": "customer"}))), Some("cus_9".into()));
        assert_eq!(id_of(Some(&json!("sub_1/../x"))), None);
        assert_eq!(id_of(Some(&json!(""))), None);
        assert_eq!(id_of(Some(&Value::Null)), None);
        assert_eq!(id_of(None), None);
    }

    #[test]
    fn subscription_events_reduce_to_changes() {
        let c = StripeConfig::resolve(&env(&FULL)).unwrap().unwrap();
        let sub = |status: &str, price: &str| {
            json!({"id": "sub_1", "customer": "cus_1", "status": status, "metadata": {"account_id": "acct_1"},
                   "items": {"data": [{"price": {"id": price}}]}})
        };
        let ch = subscription_change(&c, "customer.subscription.updated", &sub("active", "price_s")).unwrap();
        assert_eq!(ch.target, Target::Subscribe { plan: "studio", from_checkout: false });
        assert_eq!((ch.account_hint.as_deref(), ch.customer.as_deref()), (Some("acct_1"), Some("cus_1")));
        for s in ["trialing", "past_due"] {
            assert!(matches!(
                subscription_change(&c, "customer.subscription.updated", &sub(s, "price_c")).unwrap().target,
                Target::Subscribe { plan: "scale", .. }
            ));
        }
        for s in ["canceled", "unpaid", "incomplete_expired", "paused"] {
            assert_eq!(
                subscription_change(&c, "customer.subscription.updated", &sub(s, "price_s")).unwrap().target,
                Target::End
            );
        }
        assert_eq!(
            subscription_change(&c, "customer.subscription.deleted", &sub("active", "price_s")).unwrap().target,
            Target::End
        );
        assert!(subscription_change(&c, "customer.subscription.updated", &sub("incomplete", "price_s")).is_err());
        assert!(subscription_change(&c, "customer.subscription.updated", &sub("active", "price_other")).is_err());
        let two = json!({"id": "sub_1", "status": "active", "items": {"data": [{"price": {"id": "price_tax"}}, {"price": {"id": "price_i"}}]}});
        assert!(matches!(
            subscription_change(&c, "customer.subscription.updated", &two).unwrap().target,
            Target::Subscribe { plan: "indie", .. }
        ));
    }
}
