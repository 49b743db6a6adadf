//! Billing (issue 8) against a fake Stripe: a real HTTP server on
//! 127.0.0.1 that checks the Bearer key, reads Stripe's form-encoded
//! requests, records them and answers Stripe-shaped JSON. Webhook events are
//! signed here the way Stripe signs them, with an HMAC written in this file
//! (checked against a vector computed with Python's hmac), so a mistake in
//! the crate's own signing cannot hide behind a symmetric one.
//!
//! The service runs in-process (tower's `oneshot`) except in the last test,
//! which serves it on 127.0.0.1:0 and talks to it with reqwest.

use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode, Uri};
use hmac::{KeyInit, Mac};
use http_body_util::BodyExt;
use meshcheck::server::billing::{self, StripeConfig};
use meshcheck::server::clock::{Clock, SystemClock, period_start};
use meshcheck::server::{self, AppState, Config};
use meshcheck::store::sqlite::SqliteStore;
use meshcheck::store::{Account, DirBlobs, Store};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt;

const SECRET_KEY: &str = "sk_test_51MeshcheckFakeKey0123456789abcdef";
const WEBHOOK_SECRET: &str = "whsec_meshcheckFakeSigningSecret42";
const PRICE_INDIE: &str = "price_1IndieTest";
const PRICE_STUDIO: &str = "price_1StudioTest";
const PRICE_SCALE: &str = "price_1ScaleTest";
const BASE_URL: &str = "http://meshcheck.test";

// ------------------------------------------------------------ the fake Stripe

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Like Stripe on a good day.
    Normal,
    /// 400 invalid_request_error "No such price" to everything.
    Refuse,
    /// 401 whose message repeats the whole key (Stripe masks it; a proxy might not).
    EchoKey,
    /// Answers after 2 s.
    Slow,
}

/// One request the fake received.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    form: Vec<(String, String)>,
}

impl Recorded {
    fn field(&self, k: &str) -> Option<&str> {
        self.form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }
}

struct Fake {
    mode: Mode,
    requests: Vec<Recorded>,
    /// Subscription id to price id, for GET /v1/subscriptions/{id}.
    subscriptions: HashMap<String, String>,
    n: u32,
}

struct FakeStripe {
    addr: SocketAddr,
    fake: Arc<Mutex<Fake>>,
}

fn stripe_error(
    status: u16,
    kind: &str,
    code: Option<&str>,
    param: Option<&str>,
    message: &str,
) -> (StatusCode, Value) {
    let mut e = json!({"type": kind, "message": message});
    if let Some(c) = code {
        e["code"] = json!(c);
    }
    if let Some(p) = param {
        e["param"] = json!(p);
    }
    (StatusCode::from_u16(status).unwrap(), json!({ "error": e }))
}

async fn fake_stripe_answer(
    fake: Arc<Mutex<Fake>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: bytes::Bytes,
) -> (StatusCode, Value) {
    let header = |k: &str| headers.get(k).and_then(|v| v.to_str().ok()).map(str::to_string);
    let rec = Recorded {
        method: method.to_string(),
        path: uri.path().to_string(),
        authorization: header("authorization"),
        content_type: header("content-type"),
        form: url::form_urlencoded::parse(&body).into_owned().collect(),
    };
    let (mode, n) = {
        let mut f = fake.lock().unwrap();
        f.requests.push(rec.clone());
        f.n += 1;
        (f.mode, f.n)
    };
    match mode {
        Mode::Normal => {}
        Mode::Slow => tokio::time::sleep(Duration::from_secs(2)).await,
        Mode::Refuse => {
            return stripe_error(
                400,
                "invalid_request_error",
                Some("resource_missing"),
                Some("line_items[0][price]"),
                &format!("No such price: '{PRICE_INDIE}'"),
            );
        }
        Mode::EchoKey => {
            return stripe_error(
                401,
                "invalid_request_error",
                None,
                None,
                &format!("Invalid API Key provided: {SECRET_KEY}"),
            );
        }
    }
    if rec.authorization.as_deref() != Some(&format!("Bearer {SECRET_KEY}")) {
        return stripe_error(401, "invalid_request_error", None, None, "Invalid API Key provided: sk_test_****cdef");
    }
    let form_ok = rec.content_type.as_deref() == Some("application/x-www-form-urlencoded");
    match (rec.method.as_str(), rec.path.as_str()) {
        ("POST", "/v1/checkout/sessions") => {
            if !form_ok || rec.field("mode").is_none() || rec.field("success_url").is_none() {
                return stripe_error(400, "invalid_request_error", None, None, "Missing required param: mode.");
            }
            let id = format!("cs_test_a1{n:04}");
            (
                StatusCode::OK,
                json!({
                    "id": id,
                    "object": "checkout.session",
                    "mode": rec.field("mode"),
                    "status": "open",
                    "payment_status": "unpaid",
                    "client_reference_id": rec.field("client_reference_id"),
                    "customer": rec.field("customer"),
                    "customer_email": rec.field("customer_email"),
                    "metadata": {"account_id": rec.field("metadata[account_id]"), "plan": rec.field("metadata[plan]")},
                    "success_url": rec.field("success_url"),
                    "cancel_url": rec.field("cancel_url"),
                    "subscription": null,
                    "url": format!("https://checkout.stripe.com/c/pay/{id}#fidkdWxOYHwnPyd1blpxYHZxWjA0"),
                }),
            )
        }
        ("POST", "/v1/billing_portal/sessions") => {
            let Some(customer) = rec.field("customer").filter(|_| form_ok) else {
                return stripe_error(400, "invalid_request_error", None, None, "Missing required param: customer.");
            };
            if customer == "cus_deleted" {
                return stripe_error(
                    400,
                    "invalid_request_error",
                    Some("resource_missing"),
                    Some("customer"),
                    "No such customer: 'cus_deleted'",
                );
            }
            (
                StatusCode::OK,
                json!({
                    "id": format!("bps_1Test{n:04}"),
                    "object": "billing_portal.session",
                    "customer": customer,
                    "return_url": rec.field("return_url"),
                    "livemode": false,
                    "url": format!("https://billing.stripe.com/p/session/test_YWNjdF8x{n:04}"),
                }),
            )
        }
        ("GET", path) if path.starts_with("/v1/subscriptions/") => {
            let id = &path["/v1/subscriptions/".len()..];
            let price = fake.lock().unwrap().subscriptions.get(id).cloned();
            match price {
                Some(price) => (StatusCode::OK, subscription_object(id, "cus_fallback", None, "active", &price)),
                None => stripe_error(
                    404,
                    "invalid_request_error",
                    Some("resource_missing"),
                    Some("id"),
                    &format!("No such subscription: '{id}'"),
                ),
            }
        }
        _ => stripe_error(404, "invalid_request_error", None, None, "Unrecognized request URL."),
    }
}

impl FakeStripe {
    async fn start() -> FakeStripe {
        let fake = Arc::new(Mutex::new(Fake {
            mode: Mode::Normal,
            requests: Vec::new(),
            subscriptions: HashMap::new(),
            n: 0,
        }));
        let f = fake.clone();
        let app = Router::new().fallback(move |method: Method, uri: Uri, headers: HeaderMap, body: bytes::Bytes| {
            let f = f.clone();
            async move {
                let (status, body) = fake_stripe_answer(f, method, uri, headers, body).await;
                (status, axum::Json(body))
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeStripe { addr, fake }
    }
    fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
    fn mode(&self, m: Mode) {
        self.fake.lock().unwrap().mode = m;
    }
    fn requests(&self) -> Vec<Recorded> {
        self.fake.lock().unwrap().requests.clone()
    }
    fn clear(&self) {
        self.fake.lock().unwrap().requests.clear();
    }
    fn subscription(&self, id: &str, price: &str) {
        self.fake.lock().unwrap().subscriptions.insert(id.into(), price.into());
    }
}

fn config_at(base: &str) -> StripeConfig {
    let env = |k: &str| {
        Some(
            match k {
                "STRIPE_SECRET_KEY" => SECRET_KEY,
                "STRIPE_WEBHOOK_SECRET" => WEBHOOK_SECRET,
                "STRIPE_PRICE_INDIE" => PRICE_INDIE,
                "STRIPE_PRICE_STUDIO" => PRICE_STUDIO,
                "STRIPE_PRICE_SCALE" => PRICE_SCALE,
                "STRIPE_API_BASE" => base,
                _ => return None,
            }
            .to_string(),
        )
    };
    StripeConfig::resolve(&env).unwrap().expect("configured")
}

// ------------------------------------------------------------ Stripe's signing, written independently

/// `Stripe-Signature` for `body` at `t`: hex HMAC-SHA256 keyed by the whole
/// `whsec_...` string over `"{t}.{body}"`.
fn stripe_signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut m = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap();
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body);
    let sig: String = m.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect();
    format!("t={t},v1={sig}")
}

#[test]
fn the_test_signer_matches_python_and_the_crate() {
    // python3 -c 'import hmac,hashlib; print(hmac.new(b"whsec_meshcheck_fixed_vector",
    //   b"1700000000.{\"id\":\"evt_fixed\",\"type\":\"ping\"}", hashlib.sha256).hexdigest())'
    let body = br#"{"id":"evt_fixed","type":"ping"}"#;
    let expected = "t=1700000000,v1=2425c778b970bf43015449c6d7385c9e0b6280da3e0cb3d2b6408abb0713fe4b";
    assert_eq!(stripe_signature("whsec_meshcheck_fixed_vector", 1_700_000_000, body), expected);
    assert_eq!(billing::sign("whsec_meshcheck_fixed_vector", 1_700_000_000, body), expected);
}

// ------------------------------------------------------------ the service

struct Srv {
    state: AppState,
    clock: Arc<SystemClock>,
    store: Arc<SqliteStore>,
    _tmp: tempfile::TempDir,
}

#[derive(Debug)]
struct Resp {
    status: StatusCode,
    headers: HeaderMap,
    json: Value,
    text: String,
}

impl Resp {
    fn expect(&self, status: u16, code: &str) -> &Self {
        assert_eq!(self.status.as_u16(), status, "{}", self.text);
        assert_eq!(self.json["error"]["code"], code, "{}", self.text);
        assert!(self.json["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", self.text);
        self
    }
    fn ok(&self) -> &Value {
        assert_eq!(self.status.as_u16(), 200, "{}", self.text);
        &self.json
    }
    fn detail(&self) -> (&str, &str) {
        let d = &self.json["error"]["detail"];
        (d["field"].as_str().unwrap_or(""), d["reason"].as_str().unwrap_or(""))
    }
}

fn srv(stripe: Option<StripeConfig>) -> Srv {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut config = Config::new(dir.to_path_buf(), BASE_URL);
    config.workers = 1;
    config.stripe = stripe;
    let store = Arc::new(SqliteStore::open(&dir.join("meshcheck.sqlite")).unwrap());
    let blobs = Arc::new(DirBlobs::new(dir.join("blobs")).unwrap());
    let shots = Arc::new(DirBlobs::new(dir.join("screenshots")).unwrap());
    let clock = Arc::new(SystemClock::new());
    let state = AppState::with_parts(config, store.clone(), blobs, shots, clock.clone(), None).unwrap();
    Srv { state, clock, store, _tmp: tmp }
}

/// A service wired to a fresh fake Stripe.
async fn with_stripe() -> (Srv, FakeStripe) {
    let fake = FakeStripe::start().await;
    (srv(Some(config_at(&fake.base()))), fake)
}

impl Srv {
    async fn call(&self, req: Request<Body>) -> Resp {
        let resp = server::router(self.state.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Resp { status, headers, json: serde_json::from_slice(&bytes).unwrap_or(Value::Null), text }
    }
    fn account(&self, plan: &str, email: Option<&str>) -> (Account, String) {
        self.store.create_account(plan, email, self.clock.now()).unwrap()
    }
    fn reload(&self, a: &Account) -> Account {
        self.store.account(&a.id).unwrap().unwrap()
    }
    /// Spends `credits` in the current period, as a validation would.
    fn spend(&self, a: &Account, credits: i64, allowance: i64) {
        let now = self.clock.now();
        let r = self.store.charge(
            &a.id,
            credits,
            allowance,
            period_start(a.created_at, now),
            "validate",
            &format!("rpt_t{now}{credits}"),
            now,
        );
        assert!(matches!(r.unwrap(), meshcheck::store::Charge::Charged { .. }));
    }
    async fn checkout_raw(&self, key: &str, body: &str) -> Resp {
        let req = Request::post("/v1/billing/checkout")
            .header("x-api-key", key)
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap();
        self.call(req).await
    }
    async fn checkout(&self, key: &str, plan: &str) -> Resp {
        self.checkout_raw(key, &json!({ "plan": plan }).to_string()).await
    }
    async fn portal(&self, key: &str) -> Resp {
        self.call(Request::post("/v1/billing/portal").header("x-api-key", key).body(Body::empty()).unwrap()).await
    }
    /// GET /v1/account. Moves the clock a minute first so the key's bucket
    /// is full (free keys have 10 requests a minute).
    async fn snapshot(&self, key: &str) -> Resp {
        self.clock.advance(60);
        self.call(Request::get("/v1/account").header("x-api-key", key).body(Body::empty()).unwrap()).await
    }
    async fn webhook_with(&self, body: &[u8], signature: Option<&str>) -> Resp {
        let mut b = Request::post("/v1/billing/webhook").header("content-type", "application/json");
        if let Some(s) = signature {
            b = b.header("stripe-signature", s);
        }
        self.call(b.body(Body::from(body.to_vec())).unwrap()).await
    }
    /// Delivers an event signed as Stripe would, now.
    async fn deliver(&self, event: &Value) -> Resp {
        let body = serde_json::to_vec(event).unwrap();
        self.webhook_with(&body, Some(&stripe_signature(WEBHOOK_SECRET, self.clock.now(), &body))).await
    }
    async fn deliver_ok(&self, event: &Value, result: &str) -> Value {
        let r = self.deliver(event).await;
        assert_eq!(r.ok()["received"], true);
        assert_eq!(r.json["result"], result, "{}", r.text);
        r.json.clone()
    }
}

fn event(id: &str, kind: &str, object: Value) -> Value {
    json!({
        "id": id,
        "object": "event",
        "api_version": "2024-06-20",
        "created": 1_700_000_000,
        "livemode": false,
        "pending_webhooks": 1,
        "request": {"id": null, "idempotency_key": null},
        "type": kind,
        "data": {"object": object},
    })
}

fn checkout_completed(id: &str, account: &str, customer: &str, sub: &str, plan: Option<&str>) -> Value {
    let mut metadata = json!({ "account_id": account });
    if let Some(p) = plan {
        metadata["plan"] = json!(p);
    }
    event(
        id,
        "checkout.session.completed",
        json!({
            "id": format!("cs_test_{id}"),
            "object": "checkout.session",
            "mode": "subscription",
            "status": "complete",
            "payment_status": "paid",
            "client_reference_id": account,
            "customer": customer,
            "subscription": sub,
            "metadata": metadata,
        }),
    )
}

fn subscription_object(id: &str, customer: &str, account: Option<&str>, status: &str, price: &str) -> Value {
    json!({
        "id": id,
        "object": "subscription",
        "customer": customer,
        "status": status,
        "cancel_at_period_end": false,
        "metadata": account.map(|a| json!({"account_id": a})).unwrap_or(json!({})),
        "items": {"object": "list", "data": [
            {"id": "si_1Test", "object": "subscription_item", "price": {"id": price, "object": "price"}, "quantity": 1}
        ]},
    })
}

fn subscription_event(id: &str, kind: &str, sub: &str, account: &str, status: &str, price: &str) -> Value {
    event(id, kind, subscription_object(sub, "cus_Test1", Some(account), status, price))
}

/// The plan name, monthly credits, subscription and balance of a snapshot.
fn summary(a: &Value) -> (String, i64, Value, i64) {
    (
        a["plan"]["name"].as_str().unwrap().to_string(),
        a["plan"]["monthly_credits"].as_i64().unwrap(),
        a["subscription"].clone(),
        a["balance"].as_i64().unwrap(),
    )
}

fn stripe_sub(id: &str) -> Value {
    json!({"provider": "stripe", "subscription_id": id})
}

fn no_sub() -> Value {
    json!({"provider": null, "subscription_id": null})
}

// ------------------------------------------------------------ not configured

#[tokio::test]
async fn without_configuration_every_route_is_503() {
    let s = srv(None);
    let (_, key) = s.account("free", None);
    s.checkout(&key, "indie").await.expect(503, "BILLING_UNAVAILABLE");
    // A bad body is the client's mistake whether or not billing is configured.
    s.checkout(&key, "free").await.expect(400, "BAD_REQUEST");
    s.portal(&key).await.expect(503, "BILLING_UNAVAILABLE");
    let body = serde_json::to_vec(&event("evt_1", "invoice.paid", json!({}))).unwrap();
    let sig = stripe_signature(WEBHOOK_SECRET, s.clock.now(), &body);
    s.webhook_with(&body, Some(&sig)).await.expect(503, "BILLING_UNAVAILABLE");
    s.webhook_with(b"", None).await.expect(503, "BILLING_UNAVAILABLE");
    // The key still comes first on the authenticated routes.
    let r = s.call(Request::post("/v1/billing/checkout").body(Body::from(r#"{"plan":"indie"}"#)).unwrap()).await;
    r.expect(401, "MISSING_API_KEY");
    let r = s
        .call(Request::post("/v1/billing/portal").header("x-api-key", "mk_live_nope").body(Body::empty()).unwrap())
        .await;
    r.expect(401, "INVALID_API_KEY");
}

// ------------------------------------------------------------ checkout

#[tokio::test]
async fn checkout_creates_a_subscription_session_for_each_plan() {
    let (s, fake) = with_stripe().await;
    for (plan, price) in [("indie", PRICE_INDIE), ("studio", PRICE_STUDIO), ("scale", PRICE_SCALE)] {
        fake.clear();
        let (a, key) = s.account("free", None);
        let r = s.checkout(&key, plan).await;
        let url = r.ok()["url"].as_str().unwrap().to_string();
        assert_eq!(r.json.as_object().unwrap().len(), 1, "only {{url}}: {}", r.text);
        assert!(url.starts_with("https://checkout.stripe.com/c/pay/cs_test_"), "{url}");
        assert!(r.headers.contains_key("ratelimit-remaining"));
        let sent = fake.requests();
        assert_eq!(sent.len(), 1, "{sent:?}");
        let q = &sent[0];
        assert_eq!((q.method.as_str(), q.path.as_str()), ("POST", "/v1/checkout/sessions"));
        assert_eq!(q.authorization.as_deref(), Some(format!("Bearer {SECRET_KEY}").as_str()));
        assert_eq!(q.content_type.as_deref(), Some("application/x-www-form-urlencoded"));
        let expect = [
            ("mode", "subscription"),
            ("line_items[0][price]", price),
            ("line_items[0][quantity]", "1"),
            ("client_reference_id", &a.id),
            ("metadata[account_id]", &a.id),
            ("metadata[plan]", plan),
            ("subscription_data[metadata][account_id]", &a.id),
            ("subscription_data[metadata][plan]", plan),
            ("success_url", "http://meshcheck.test/?billing=success"),
            ("cancel_url", "http://meshcheck.test/?billing=cancelled"),
        ];
        for (k, v) in expect {
            assert_eq!(q.field(k), Some(v), "{k} in {:?}", q.form);
        }
        assert_eq!((q.field("customer"), q.field("customer_email")), (None, None), "no customer, no email");
        assert!(!q.form.iter().any(|(_, v)| v.contains(SECRET_KEY)));
    }
    // An account with an email prefills Checkout; one with a customer reuses it.
    let (_, key) = s.account("free", Some("dev@studio.example"));
    fake.clear();
    s.checkout(&key, "indie").await.ok();
    assert_eq!(fake.requests()[0].field("customer_email"), Some("dev@studio.example"));
    let (a, key) = s.account("free", Some("dev@studio.example"));
    s.store.set_billing(&a.id, "free", Some("cus_Existing1"), None, None).unwrap();
    fake.clear();
    s.checkout(&key, "scale").await.ok();
    let q = &fake.requests()[0];
    assert_eq!((q.field("customer"), q.field("customer_email")), (Some("cus_Existing1"), None));
}

#[tokio::test]
async fn bad_checkout_bodies_are_400_and_reach_no_one() {
    let (s, fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let cases: [(&str, (&str, &str)); 9] = [
        (r#"{"plan":"free"}"#, ("plan", "not purchasable")),
        (r#"{"plan":"enterprise"}"#, ("plan", "enum")),
        (r#"{"plan":"INDIE"}"#, ("plan", "enum")),
        (r#"{"plan":2}"#, ("plan", "enum")),
        (r#"{}"#, ("plan", "missing")),
        ("", ("plan", "missing")),
        (r#"{"plan":"indie","quantity":3}"#, ("quantity", "unknown field")),
        (r#"["indie"]"#, ("body", "not an object")),
        (r#"{"plan":"indie""#, ("body", "invalid JSON")),
    ];
    for (body, detail) in cases {
        s.clock.advance(6); // one token a request on the free plan's bucket
        let r = s.checkout_raw(&key, body).await;
        r.expect(400, "BAD_REQUEST");
        assert_eq!(r.detail(), detail, "{body}: {}", r.text);
    }
    s.clock.advance(6);
    s.checkout_raw(&key, &format!(r#"{{"plan":"{}"}}"#, "x".repeat(20_000))).await.expect(400, "BAD_REQUEST");
    assert!(fake.requests().is_empty(), "nothing reaches Stripe: {:?}", fake.requests());
    // An account that already pays changes plans in the portal, not with a second subscription.
    s.store.set_billing(&a.id, "indie", Some("cus_A"), Some("stripe"), Some("sub_A")).unwrap();
    let r = s.checkout(&key, "studio").await;
    r.expect(400, "BAD_REQUEST");
    assert_eq!(r.detail(), ("plan", "already subscribed"));
    assert!(r.json["error"]["message"].as_str().unwrap().contains("/v1/billing/portal"));
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn stripe_failures_are_503_and_never_show_the_key() {
    let (s, fake) = with_stripe().await;
    let (_, key) = s.account("indie", None);
    fake.mode(Mode::Refuse);
    let r = s.checkout(&key, "indie").await;
    r.expect(503, "BILLING_UNAVAILABLE");
    let msg = r.json["error"]["message"].as_str().unwrap();
    assert!(msg.contains("No such price") && msg.contains("HTTP 400"), "{msg}");
    assert_eq!(
        r.json["error"]["detail"],
        json!({"stripe_status": 400, "stripe_error": "invalid_request_error", "stripe_code": "resource_missing"})
    );
    fake.mode(Mode::EchoKey);
    let r = s.checkout(&key, "studio").await;
    r.expect(503, "BILLING_UNAVAILABLE");
    assert!(!r.text.contains(SECRET_KEY) && !r.text.contains("51MeshcheckFakeKey"), "{}", r.text);
    assert!(r.text.contains("[redacted]"), "{}", r.text);
    assert_eq!(fake.requests().len(), 2);
    // No answer in time.
    let fake_base = fake.base();
    let mut cfg = config_at(&fake_base);
    cfg.timeout = Duration::from_millis(300);
    let slow = srv(Some(cfg));
    let (a, key) = slow.account("free", None);
    fake.mode(Mode::Slow);
    let started = std::time::Instant::now();
    let r = slow.checkout(&key, "indie").await;
    r.expect(503, "BILLING_UNAVAILABLE");
    assert!(started.elapsed() < Duration::from_millis(1500), "{:?}", started.elapsed());
    assert!(r.text.contains("no answer within 0.3 s"), "{}", r.text);
    slow.store.set_billing(&a.id, "free", Some("cus_Slow"), None, None).unwrap();
    slow.portal(&key).await.expect(503, "BILLING_UNAVAILABLE");
    // Nobody listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let gone = srv(Some(config_at(&format!("http://{closed}"))));
    let (_, key) = gone.account("free", None);
    let r = gone.checkout(&key, "indie").await;
    r.expect(503, "BILLING_UNAVAILABLE");
    assert!(r.text.contains("could not connect"), "{}", r.text);
    assert_eq!(r.json["error"]["detail"]["stripe_status"], Value::Null);
}

// ------------------------------------------------------------ portal

#[tokio::test]
async fn the_portal_needs_a_customer() {
    let (s, fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let r = s.portal(&key).await;
    r.expect(404, "NOT_FOUND");
    assert!(r.json["error"]["message"].as_str().unwrap().contains("/v1/billing/checkout"));
    assert!(fake.requests().is_empty());
    s.store.set_billing(&a.id, "indie", Some("cus_Test1"), Some("stripe"), Some("sub_1")).unwrap();
    let r = s.portal(&key).await;
    assert!(r.ok()["url"].as_str().unwrap().starts_with("https://billing.stripe.com/p/session/"), "{}", r.text);
    assert_eq!(r.json.as_object().unwrap().len(), 1);
    let q = &fake.requests()[0];
    assert_eq!((q.method.as_str(), q.path.as_str()), ("POST", "/v1/billing_portal/sessions"));
    assert_eq!(q.authorization.as_deref(), Some(format!("Bearer {SECRET_KEY}").as_str()));
    assert_eq!(q.field("customer"), Some("cus_Test1"));
    assert_eq!(q.field("return_url"), Some("http://meshcheck.test/"));
    // A customer Stripe no longer knows is the same as none.
    s.store.set_billing(&a.id, "indie", Some("cus_deleted"), Some("stripe"), Some("sub_1")).unwrap();
    s.portal(&key).await.expect(404, "NOT_FOUND");
}

// ------------------------------------------------------------ webhook

#[tokio::test]
async fn webhook_signatures_are_checked() {
    let (s, _fake) = with_stripe().await;
    let (a, _) = s.account("free", None);
    let ev = checkout_completed("evt_Sig1", &a.id, "cus_Test1", "sub_Sig1", Some("indie"));
    let body = serde_json::to_vec(&ev).unwrap();
    let now = s.clock.now();
    let good = stripe_signature(WEBHOOK_SECRET, now, &body);
    let v1 = good.split_once(",v1=").unwrap().1.to_string();
    let refused: Vec<(Option<String>, Vec<u8>, &str)> = vec![
        (None, body.clone(), "missing"),
        (Some(stripe_signature("whsec_someone_else", now, &body)), body.clone(), "mismatch"),
        (Some(good.clone()), [&body[..], b" "].concat(), "mismatch"),
        (Some(format!("t={},v1={v1}", now + 1)), body.clone(), "mismatch"),
        (Some(stripe_signature(WEBHOOK_SECRET, now - 301, &body)), body.clone(), "stale"),
        (Some(stripe_signature(WEBHOOK_SECRET, now + 301, &body)), body.clone(), "stale"),
        (Some(format!("v1={v1}")), body.clone(), "malformed"),
        (Some(format!("t=yesterday,v1={v1}")), body.clone(), "malformed"),
        (Some(format!("t={now}")), body.clone(), "malformed"),
        (Some("garbage".into()), body.clone(), "malformed"),
    ];
    for (sig, body, reason) in refused {
        let r = s.webhook_with(&body, sig.as_deref()).await;
        r.expect(400, "BAD_REQUEST");
        assert_eq!(r.detail(), ("Stripe-Signature", reason), "{sig:?}: {}", r.text);
    }
    // A signature made 299 s ago still counts; several v1 values may be sent (secret rotation).
    let old = stripe_signature(WEBHOOK_SECRET, now - 299, &body);
    let rotated = format!("{old},v1={}", "ab".repeat(32));
    assert_eq!(s.reload(&a).plan, "free", "nothing refused was applied");
    let r = s.webhook_with(&body, Some(&rotated)).await;
    assert_eq!(r.ok()["result"], "applied", "{}", r.text);
    assert_eq!(s.reload(&a).plan, "indie");
    // The cap.
    let big = vec![b' '; 1_000_001];
    let r = s.webhook_with(&big, Some(&stripe_signature(WEBHOOK_SECRET, now, &big))).await;
    r.expect(413, "FILE_TOO_LARGE");
    // Authentic but not an event.
    let r = s.webhook_with(b"[1,2]", Some(&stripe_signature(WEBHOOK_SECRET, now, b"[1,2]"))).await;
    r.expect(400, "BAD_REQUEST");
    // The clock moving past the tolerance makes a signature stale.
    let fresh = stripe_signature(WEBHOOK_SECRET, s.clock.now(), &body);
    s.clock.advance(301);
    assert_eq!(s.webhook_with(&body, Some(&fresh)).await.detail(), ("Stripe-Signature", "stale"));
}

#[tokio::test]
async fn checkout_completed_activates_the_plan_at_once() {
    let (s, _fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    s.spend(&a, 10, 300);
    let before = s.snapshot(&key).await;
    assert_eq!(summary(before.ok()), ("free".into(), 300, no_sub(), 290));
    assert_eq!(before.headers["ratelimit-limit"], "10");
    let ev = checkout_completed("evt_1Done", &a.id, "cus_Test1", "sub_1Indie", Some("indie"));
    s.deliver_ok(&ev, "applied").await;
    let after = s.snapshot(&key).await;
    assert_eq!(summary(after.ok()), ("indie".into(), 3000, stripe_sub("sub_1Indie"), 2990));
    assert_eq!(after.json["plan"]["rate_per_min"], 30);
    assert_eq!(after.json["usage"]["credits_used"], 10, "the period and its usage carry over");
    assert_eq!(after.headers["ratelimit-limit"], "30", "the new rate limit applies to the next request");
    assert_eq!(s.reload(&a).customer_id.as_deref(), Some("cus_Test1"));
    // Stripe delivers again: applied once.
    s.deliver_ok(&ev, "duplicate").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("indie".into(), 3000, stripe_sub("sub_1Indie"), 2990));
}

#[tokio::test]
async fn a_subscription_lives_and_ends() {
    let (s, fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let first = checkout_completed("evt_L1", &a.id, "cus_Test1", "sub_L", Some("indie"));
    s.deliver_ok(&first, "applied").await;
    s.spend(&a, 500, 3000);
    // Upgrade in the portal.
    let up = subscription_event("evt_L2", "customer.subscription.updated", "sub_L", &a.id, "active", PRICE_STUDIO);
    s.deliver_ok(&up, "applied").await;
    let snap = s.snapshot(&key).await;
    assert_eq!(summary(snap.ok()), ("studio".into(), 10_000, stripe_sub("sub_L"), 9_500));
    assert_eq!(snap.headers["ratelimit-limit"], "60");
    // The first event again, late: already applied, so no step back to indie.
    s.deliver_ok(&first, "duplicate").await;
    // A price that is none of ours is ignored.
    let odd = subscription_event("evt_L3", "customer.subscription.updated", "sub_L", &a.id, "active", "price_Other");
    assert!(s.deliver_ok(&odd, "ignored").await["reason"].as_str().unwrap().contains("price_Other"));
    // Events about another subscription of the same customer leave this one alone.
    let other =
        subscription_event("evt_L4", "customer.subscription.updated", "sub_Other", &a.id, "active", PRICE_SCALE);
    s.deliver_ok(&other, "ignored").await;
    let other_gone =
        subscription_event("evt_L5", "customer.subscription.deleted", "sub_Other", &a.id, "canceled", PRICE_SCALE);
    s.deliver_ok(&other_gone, "ignored").await;
    // Waiting for the first payment changes nothing; a failing renewal keeps the plan while Stripe retries.
    let inc = subscription_event("evt_L6", "customer.subscription.updated", "sub_L", &a.id, "incomplete", PRICE_STUDIO);
    s.deliver_ok(&inc, "ignored").await;
    let due = subscription_event("evt_L7", "customer.subscription.updated", "sub_L", &a.id, "past_due", PRICE_STUDIO);
    s.deliver_ok(&due, "applied").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("studio".into(), 10_000, stripe_sub("sub_L"), 9_500));
    // Cancelled: back to free; the 500 used exceed free's 300, so the balance is 0.
    let gone = subscription_event("evt_L8", "customer.subscription.deleted", "sub_L", &a.id, "canceled", PRICE_STUDIO);
    s.deliver_ok(&gone, "applied").await;
    let snap = s.snapshot(&key).await;
    assert_eq!(summary(snap.ok()), ("free".into(), 300, no_sub(), 0));
    assert_eq!(snap.headers["ratelimit-limit"], "10");
    let acct = s.reload(&a);
    assert_eq!((acct.customer_id.as_deref(), acct.subscription_id.as_deref()), (Some("cus_Test1"), None));
    // The customer stays, so the portal (invoices, resubscribing) still opens.
    s.portal(&key).await.ok();
    assert_eq!(fake.requests().last().unwrap().field("customer"), Some("cus_Test1"));
    // Subscribing again after the end works.
    let again = checkout_completed("evt_L9", &a.id, "cus_Test1", "sub_L2", Some("scale"));
    s.deliver_ok(&again, "applied").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("scale".into(), 40_000, stripe_sub("sub_L2"), 39_500));
    // An unpaid subscription ends the plan too.
    let unpaid = subscription_event("evt_L10", "customer.subscription.updated", "sub_L2", &a.id, "unpaid", PRICE_SCALE);
    s.deliver_ok(&unpaid, "applied").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("free".into(), 300, no_sub(), 0));
}

#[tokio::test]
async fn subscription_events_may_arrive_before_the_checkout() {
    let (s, _fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let created = subscription_event("evt_E1", "customer.subscription.created", "sub_E", &a.id, "active", PRICE_INDIE);
    s.deliver_ok(&created, "applied").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("indie".into(), 3000, stripe_sub("sub_E"), 3000));
    let done = checkout_completed("evt_E2", &a.id, "cus_Test1", "sub_E", Some("indie"));
    s.deliver_ok(&done, "ignored").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("indie".into(), 3000, stripe_sub("sub_E"), 3000));
    // Without metadata, the subscription is found by its id.
    let bare = event(
        "evt_E3",
        "customer.subscription.updated",
        subscription_object("sub_E", "cus_Test1", None, "active", PRICE_SCALE),
    );
    s.deliver_ok(&bare, "applied").await;
    assert_eq!(s.reload(&a).plan, "scale");
}

#[tokio::test]
async fn other_events_and_strangers_are_acknowledged() {
    let (s, _fake) = with_stripe().await;
    let (a, _) = s.account("free", None);
    let r = s.deliver_ok(&event("evt_O1", "invoice.paid", json!({"id": "in_1", "object": "invoice"})), "ignored").await;
    assert!(r["reason"].as_str().unwrap().contains("invoice.paid"));
    // An account that does not exist (deleted, or another server's).
    let stray = checkout_completed("evt_O2", "acct_Nobody", "cus_Nobody", "sub_Nobody", Some("indie"));
    s.deliver_ok(&stray, "ignored").await;
    let stray_sub = event(
        "evt_O3",
        "customer.subscription.deleted",
        subscription_object("sub_Nobody", "cus_Nobody", None, "canceled", PRICE_INDIE),
    );
    s.deliver_ok(&stray_sub, "ignored").await;
    // A one-off payment checkout is not a subscription.
    let mut payment = checkout_completed("evt_O4", &a.id, "cus_Test1", "sub_X", Some("indie"));
    payment["data"]["object"]["mode"] = json!("payment");
    s.deliver_ok(&payment, "ignored").await;
    assert_eq!(s.reload(&a).plan, "free");
    // Not an event at all.
    let body = br#"{"id":"evt_O5","type":"checkout.session.completed"}"#;
    let r = s.webhook_with(body, Some(&stripe_signature(WEBHOOK_SECRET, s.clock.now(), body))).await;
    r.expect(400, "BAD_REQUEST");
    assert_eq!(r.detail(), ("body", "not an event"));
}

#[tokio::test]
async fn a_checkout_without_plan_metadata_asks_stripe_for_the_subscription() {
    let (s, fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let ev = checkout_completed("evt_F1", &a.id, "cus_Test1", "sub_F", None);
    // Stripe failing: 503 and the event is not recorded, so its redelivery applies.
    fake.mode(Mode::Refuse);
    s.deliver(&ev).await.expect(503, "BILLING_UNAVAILABLE");
    assert_eq!(s.reload(&a).plan, "free");
    fake.mode(Mode::Normal);
    fake.subscription("sub_F", PRICE_SCALE);
    s.deliver_ok(&ev, "applied").await;
    let q = fake.requests().last().unwrap().clone();
    assert_eq!((q.method.as_str(), q.path.as_str()), ("GET", "/v1/subscriptions/sub_F"));
    assert_eq!(q.authorization.as_deref(), Some(format!("Bearer {SECRET_KEY}").as_str()));
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("scale".into(), 40_000, stripe_sub("sub_F"), 40_000));
}

#[tokio::test]
async fn a_delayed_payment_applies_when_it_succeeds() {
    let (s, _fake) = with_stripe().await;
    let (a, key) = s.account("free", None);
    let mut pending = checkout_completed("evt_P1", &a.id, "cus_Sepa", "sub_P", Some("studio"));
    pending["data"]["object"]["payment_status"] = json!("unpaid");
    s.deliver_ok(&pending, "applied").await;
    let acct = s.reload(&a);
    assert_eq!(
        (acct.plan.as_str(), acct.customer_id.as_deref(), acct.subscription_id),
        ("free", Some("cus_Sepa"), None)
    );
    s.portal(&key).await.ok();
    let mut paid = pending.clone();
    paid["id"] = json!("evt_P2");
    paid["type"] = json!("checkout.session.async_payment_succeeded");
    paid["data"]["object"]["payment_status"] = json!("paid");
    s.deliver_ok(&paid, "applied").await;
    assert_eq!(summary(s.snapshot(&key).await.ok()), ("studio".into(), 10_000, stripe_sub("sub_P"), 10_000));
}

// ------------------------------------------------------------ over real HTTP

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_over_http() {
    let (s, fake) = with_stripe().await;
    let (a, key) = s.account("free", Some("ops@example.com"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, s.state.clone(), async move {
        let _ = stopped.await;
    }));
    let http = reqwest::Client::new();
    let url = |p: &str| format!("http://{addr}{p}");
    for _ in 0..500 {
        if http.get(url("/healthz")).send().await.is_ok_and(|r| r.status() == 200) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r = http.post(url("/v1/billing/portal")).header("x-api-key", &key).send().await.unwrap();
    assert_eq!(r.status(), 404);
    let r = http
        .post(url("/v1/billing/checkout"))
        .header("x-api-key", &key)
        .json(&json!({"plan": "indie"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let checkout: Value = r.json().await.unwrap();
    assert!(checkout["url"].as_str().unwrap().starts_with("https://checkout.stripe.com/"));
    assert_eq!(fake.requests()[0].field("customer_email"), Some("ops@example.com"));
    // Stripe calls back.
    let body = serde_json::to_vec(&checkout_completed("evt_H1", &a.id, "cus_Http", "sub_Http", Some("indie"))).unwrap();
    let post = |sig: String| {
        http.post(url("/v1/billing/webhook"))
            .header("content-type", "application/json; charset=utf-8")
            .header("stripe-signature", sig)
            .body(body.clone())
            .send()
    };
    let r = post(stripe_signature("whsec_wrong", s.clock.now(), &body)).await.unwrap();
    assert_eq!(r.status(), 400);
    let r = post(stripe_signature(WEBHOOK_SECRET, s.clock.now(), &body)).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"received": true, "result": "applied"}));
    let account: Value =
        http.get(url("/v1/account")).header("x-api-key", &key).send().await.unwrap().json().await.unwrap();
    assert_eq!(summary(&account), ("indie".into(), 3000, stripe_sub("sub_Http"), 3000));
    let r = http.post(url("/v1/billing/portal")).header("x-api-key", &key).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let portal: Value = r.json().await.unwrap();
    assert!(portal["url"].as_str().unwrap().starts_with("https://billing.stripe.com/"));
    let _ = stop.send(());
    task.await.unwrap().unwrap();
}
