//! Observability for operators (issue 21): `GET /metrics` on the admin
//! listener only, its whole exposition read by a real parser (the
//! prom_text_format_parser crate, a grammar of the Prometheus text format
//! that fails on any line it cannot read, on a TYPE whose samples carry
//! another name, on metadata without samples), the counters moving with the
//! right labels; and request ids that match across the logs: an incoming
//! `X-Request-Id` on the request's span, on the event that queues a job
//! (with the job id) and back on the response, the job id on the worker's
//! span. In process through the routers, and through the binary with
//! `--metrics-addr 127.0.0.1:0` and JSON logs.

use crate::serve::{box_glb, srv};
use crate::support::multipart;
use crate::support::serve_process::{create_account, serve_command, start};
use crate::testkit::padded_glb;
use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use meshcheck::server;
use prom_text_format_parser::{Labels, Metric, Scrape, Type, ValueType};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tower::ServiceExt;

/// The exposition's content type (Prometheus text format 0.0.4).
const TEXT_FORMAT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Parses a whole exposition; beyond the grammar, every metric has HELP
/// and a type, the `meshcheck_` prefix, and appears once. The parser is
/// stricter than Prometheus in one way: a metric with HELP and TYPE but no
/// sample (the request counters of a server nobody asked yet) is an error
/// to it, so the tests scrape after a request.
fn parse(text: &str) -> Scrape {
    let scrape = Scrape::parse(text).unwrap_or_else(|e| panic!("not Prometheus text format: {e:?}\n{text}"));
    let mut seen = HashSet::new();
    for m in &scrape.metrics {
        assert!(m.name.starts_with("meshcheck_"), "{}", m.name);
        assert!(m.help_desc.as_deref().is_some_and(|h| !h.is_empty()), "{} has no HELP", m.name);
        assert_ne!(m.kind, Type::Untyped, "{} has no TYPE", m.name);
        assert!(seen.insert(m.name.clone()), "{} appears twice", m.name);
    }
    assert!(!scrape.metrics.is_empty(), "no metrics at all");
    scrape
}

fn metric<'a>(scrape: &'a Scrape, name: &str) -> &'a Metric {
    scrape.metrics.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("no metric {name}"))
}

/// Whether `got` holds exactly `want` and, when given, `le`.
fn same_labels(got: &Labels, want: &[(&str, &str)], le: bool) -> bool {
    got.len() == want.len() + usize::from(le)
        && want.iter().all(|(k, v)| got.iter().any(|l| l.key == *k && l.value == *v))
        && (!le || got.iter().any(|l| l.key == "le"))
}

/// The value of the counter or gauge `name` with exactly `labels`.
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let m = metric(scrape, name);
    assert!(matches!(m.kind, Type::Counter | Type::Gauge), "{name} is a {:?}", m.kind);
    m.samples.iter().find(|s| same_labels(&s.labels, labels, false)).map(|s| s.value.value.as_f64())
}

/// A histogram's series for `labels`: its buckets (upper bound, cumulative
/// count) in order, its sum and its count.
fn histogram(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> (Vec<(f64, f64)>, f64, f64) {
    let m = metric(scrape, name);
    assert_eq!(m.kind, Type::Histogram, "{name}");
    let mut buckets = Vec::new();
    let (mut sum, mut count) = (None, None);
    for s in &m.samples {
        let v = s.value.value.as_f64();
        match s.value.value_type {
            ValueType::Sample if same_labels(&s.labels, labels, true) => {
                let le = &s.labels.iter().find(|l| l.key == "le").unwrap().value;
                buckets.push((if le == "+Inf" { f64::INFINITY } else { le.parse().unwrap() }, v));
            }
            ValueType::Sum if same_labels(&s.labels, labels, false) => sum = Some(v),
            ValueType::Count if same_labels(&s.labels, labels, false) => count = Some(v),
            _ => {}
        }
    }
    assert!(!buckets.is_empty(), "no histogram {name} {labels:?}");
    (buckets, sum.expect("a _sum"), count.expect("a _count"))
}

/// The public router never answers /metrics; every request there gets a
/// request id (the caller's when sane) and is counted under its route
/// template, or "unmatched"; the admin router serves the exposition.
#[tokio::test]
async fn metrics_are_on_the_admin_router_only_and_requests_carry_ids() {
    let s = srv();
    let (_, key) = s.account("free");
    let r = s.get("/metrics", None).await;
    assert_eq!(r.status, 404, "the public router has no /metrics");
    let generated = r.headers["x-request-id"].to_str().unwrap().to_string();
    assert!(generated.starts_with("req_") && generated.len() == 20, "{generated}");
    for (sent, kept) in [
        ("lb-7f3a9c.01", true),
        (&*"a".repeat(64), true),
        (&*"a".repeat(65), false),
        ("two words", false),
        ("naïve", false),
    ] {
        let resp = s
            .call(
                Request::get("/v1/account")
                    .header("x-api-key", &key)
                    .header("x-request-id", sent.as_bytes())
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(resp.status, 200);
        let back = resp.headers["x-request-id"].to_str().unwrap();
        assert_eq!(back == sent, kept, "{sent:?} came back as {back:?}");
        if !kept {
            assert!(back.starts_with("req_"), "a fresh id instead of {sent:?}: {back}");
        }
    }
    s.call(Request::get("/v1/reports/rpt_nothere").header("x-api-key", &key).body(Body::empty()).unwrap()).await;
    s.post_file(&key, &box_glb(), &[]).await.ok(200);

    let admin = server::admin::router(s.state.clone());
    let resp = admin.clone().oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], TEXT_FORMAT);
    let text = String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    let m = parse(&text);
    let requests = |route: &str, method: &str, status: &str| {
        value(&m, "meshcheck_http_requests_total", &[("route", route), ("method", method), ("status", status)])
    };
    assert_eq!(requests("unmatched", "GET", "404"), Some(1.0), "{text}");
    assert_eq!(requests("/v1/account", "GET", "200"), Some(5.0), "{text}");
    assert_eq!(requests("/v1/reports/{id}", "GET", "404"), Some(1.0), "the template, never the path: {text}");
    assert_eq!(requests("/v1/validate", "POST", "200"), Some(1.0), "{text}");
    assert!(!text.contains("rpt_nothere"), "no raw path in a label");
    let (validate, sum, count) = histogram(&m, "meshcheck_http_request_duration_seconds", &[("route", "/v1/validate")]);
    let bounds: Vec<f64> = validate.iter().map(|b| b.0).collect();
    assert_eq!(&bounds[..bounds.len() - 1], &server::metrics::LATENCY_BUCKETS[..]);
    assert_eq!(validate.last(), Some(&(f64::INFINITY, 1.0)));
    assert!(count == 1.0 && sum > 0.0, "sum {sum}, count {count}");
    assert_eq!(value(&m, "meshcheck_credits_charged_total", &[]), Some(1.0), "a checks_only validation: {text}");
    assert_eq!(value(&m, "meshcheck_store_up", &[]), Some(1.0));
    assert_eq!(value(&m, "meshcheck_jobs", &[("state", "queued")]), Some(0.0));
    assert_eq!(value(&m, "meshcheck_job_lease_takeovers_total", &[]), Some(0.0));
    s.state.metrics.lease_takeover();
    let again = admin.clone().oneshot(Request::get("/metrics").body(Body::empty()).unwrap()).await.unwrap();
    let again = String::from_utf8(again.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap();
    assert_eq!(value(&parse(&again), "meshcheck_job_lease_takeovers_total", &[]), Some(1.0));
    let other = admin.oneshot(Request::get("/v1/account").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(other.status(), 404, "the admin listener serves nothing else");
}

/// Polls `scrape` until `ok` holds of it (the webhook's attempt is counted
/// once the receiver has answered, a moment after the receiver sees it).
async fn scrape_until(http: &reqwest::Client, url: &str, ok: impl Fn(&Scrape) -> bool) -> (String, Scrape) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let resp = http.get(url).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], TEXT_FORMAT);
        let text = resp.text().await.unwrap();
        let m = parse(&text);
        if ok(&m) || Instant::now() > deadline {
            return (text, m);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The binary as an operator runs it, with `--metrics-addr 127.0.0.1:0`
/// and JSON logs: a validation that succeeds, one refused (401), an
/// async job (a corrupt 21 MB upload: queued, failed, refunded) whose
/// webhook reaches a loopback receiver. The scrape shows each where it
/// belongs; the logs carry the load balancer's request id on the request
/// and on the event that queued the job, and the job id on the worker's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exposes_metrics_on_its_admin_listener_and_logs_matching_ids() {
    let (hook_addr, mut hooks) = crate::fakes::webhook_receiver(200).await;
    let tmp = tempfile::tempdir().unwrap();
    let account = create_account(tmp.path(), "studio", &[]).unwrap();
    let mut cmd = serve_command(tmp.path());
    cmd.args(["--metrics-addr", "127.0.0.1:0", "--allow-private-targets"]).env("MESHCHECK_LOG", "info");
    let mut served = tokio::task::spawn_blocking(move || start(cmd, Duration::from_secs(60))).await.unwrap().unwrap();
    let api = format!("http://{}", served.addr);
    let metrics_url = format!("http://{}/metrics", served.metrics_addr().expect("the metrics listener's address"));
    assert_ne!(served.metrics_addr().unwrap(), served.addr);
    let http = reqwest::Client::new();

    assert_eq!(http.get(format!("{api}/metrics")).send().await.unwrap().status(), 404, "not on the public listener");
    let (ctype, body) = multipart::upload(&box_glb(), &[]);
    let ok = http
        .post(format!("{api}/v1/validate"))
        .header("x-api-key", &account.key)
        .header("content-type", ctype.clone())
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let refused =
        http.post(format!("{api}/v1/validate")).header("content-type", ctype).body(body).send().await.unwrap();
    assert_eq!(refused.status(), 401);

    // The job: a GLB above the synchronous limit whose JSON is broken.
    let begin: Value = http
        .post(format!("{api}/v1/uploads"))
        .header("x-api-key", &account.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut bytes = padded_glb(21_000_000);
    bytes[20..40].copy_from_slice(&[b'x'; 20]);
    let put = http
        .put(begin["upload_url"].as_str().unwrap())
        .header("x-api-key", &account.key)
        .body(bytes)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 200);
    let request_id = "lb-4c1d9e.7f";
    let queued = http
        .post(format!("{api}/v1/validate"))
        .header("x-api-key", &account.key)
        .header("x-request-id", request_id)
        .json(&json!({"blob_id": begin["blob_id"], "webhook_url": format!("http://{hook_addr}/hook")}))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), 202);
    assert_eq!(queued.headers()["x-request-id"], request_id, "the load balancer's id comes back");
    let job_id = queued.json::<Value>().await.unwrap()["job_id"].as_str().unwrap().to_string();
    let (_, hook) = tokio::time::timeout(Duration::from_secs(60), hooks.recv()).await.unwrap().unwrap();
    let delivered: Value = serde_json::from_slice(&hook).unwrap();
    assert_eq!((delivered["job_id"].as_str(), delivered["status"].as_str()), (Some(job_id.as_str()), Some("failed")));

    let attempts = |m: &Scrape, outcome: &str| value(m, "meshcheck_webhook_attempts_total", &[("outcome", outcome)]);
    let (text, m) = scrape_until(&http, &metrics_url, |m| attempts(m, "delivered") == Some(1.0)).await;
    let requests = |route: &str, method: &str, status: &str| {
        value(&m, "meshcheck_http_requests_total", &[("route", route), ("method", method), ("status", status)])
    };
    assert_eq!(requests("/v1/validate", "POST", "200"), Some(1.0), "{text}");
    assert_eq!(requests("/v1/validate", "POST", "401"), Some(1.0), "{text}");
    assert_eq!(requests("/v1/validate", "POST", "202"), Some(1.0), "{text}");
    assert_eq!(requests("/v1/uploads/{upload_id}", "PUT", "200"), Some(1.0), "{text}");
    assert_eq!(requests("unmatched", "GET", "404"), Some(1.0), "{text}");
    assert!(!text.contains("upl_"), "no upload id (a raw path) in a label");
    let (latency, sum, count) = histogram(&m, "meshcheck_http_request_duration_seconds", &[("route", "/v1/validate")]);
    assert_eq!(latency.last(), Some(&(f64::INFINITY, 3.0)), "three validate requests timed: {text}");
    assert!(latency.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "cumulative buckets: {latency:?}");
    assert!(count == 3.0 && sum > 0.0, "sum {sum}, count {count}");
    assert_eq!(value(&m, "meshcheck_jobs", &[("state", "failed")]), Some(1.0), "{text}");
    assert_eq!(value(&m, "meshcheck_jobs", &[("state", "done")]), Some(0.0));
    assert_eq!(value(&m, "meshcheck_job_queue_depth", &[]), Some(0.0));
    assert_eq!(attempts(&m, "delivered"), Some(1.0), "{text}");
    assert_eq!(attempts(&m, "rejected"), Some(0.0));
    assert_eq!(value(&m, "meshcheck_webhook_messages_given_up_total", &[]), Some(0.0));
    assert_eq!(value(&m, "meshcheck_job_lease_takeovers_total", &[]), Some(0.0));
    // Credits, not calls: the synchronous validation stays charged, the
    // failed job is charged and refunded; the ledger agrees.
    let acct: Value = http
        .get(format!("{api}/v1/account"))
        .header("x-api-key", &account.key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let charged = value(&m, "meshcheck_credits_charged_total", &[]).unwrap();
    let refunded = value(&m, "meshcheck_credits_refunded_total", &[]).unwrap();
    assert!(refunded >= 1.0 && charged > refunded, "charged {charged}, refunded {refunded}");
    assert_eq!(charged - refunded, acct["usage"]["credits_used"].as_f64().unwrap(), "{acct}");
    assert_eq!(value(&m, "meshcheck_render_workers_started_total", &[]), Some(0.0), "nothing drawn");

    let status = tokio::task::spawn_blocking(move || {
        let status = served.stop(Duration::from_secs(60));
        (status, served.take_logs().collect::<Vec<_>>())
    })
    .await
    .unwrap();
    let (status, logs) = status;
    assert!(status.unwrap().success());
    let lines: Vec<Value> = logs.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    assert_eq!(lines.len(), logs.len(), "every log line is JSON");
    let find = |message: &str, ok: &dyn Fn(&Value) -> bool| {
        lines.iter().find(|l| l["fields"]["message"] == message && ok(l)).cloned()
    };
    let request = find("request", &|l| l["span"]["request_id"] == request_id)
        .unwrap_or_else(|| panic!("the request's line carries its id: {logs:#?}"));
    assert_eq!(
        (request["fields"]["status"].as_u64(), request["span"]["route"].as_str()),
        (Some(202), Some("/v1/validate"))
    );
    let queued = find("job queued", &|l| l["fields"]["job"] == job_id.as_str())
        .unwrap_or_else(|| panic!("the job's queueing is logged with its id: {logs:#?}"));
    assert_eq!(queued["span"]["request_id"], request_id, "and with the request's: {queued}");
    assert!(
        find("job started", &|l| l["span"]["name"] == "job" && l["span"]["job"] == job_id.as_str()).is_some(),
        "the worker's span carries the job id: {logs:#?}"
    );
    assert!(find("webhook attempt", &|l| l["fields"]["job"] == job_id.as_str()).is_some(), "{logs:#?}");
}

/// Without a metrics address there is no admin listener; `metrics_addr` in
/// the config file's `[serve]` table gives one like the flag does.
#[test]
fn the_metrics_listener_is_off_by_default_and_the_config_file_can_turn_it_on() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config.toml");
    let run = |with_file: bool| {
        let mut cmd = serve_command(&tmp.path().join("data"));
        cmd.env_remove("MESHCHECK_METRICS_ADDR").env("MESHCHECK_CONFIG", &config);
        if with_file {
            std::fs::write(&config, "[serve]\nmetrics_addr = \"127.0.0.1:0\"\n").unwrap();
        }
        let mut served = start(cmd, Duration::from_secs(60)).unwrap();
        let metrics = served.metrics_addr().map(|a| {
            // One request first: the parser refuses a metric without samples.
            assert_eq!(reqwest::blocking::get(format!("http://{}/healthz", served.addr)).unwrap().status(), 200);
            let r = reqwest::blocking::get(format!("http://{a}/metrics")).unwrap();
            (r.status().as_u16(), r.text().unwrap())
        });
        assert!(served.stop(Duration::from_secs(60)).unwrap().success());
        metrics
    };
    assert_eq!(run(false), None, "no --metrics-addr, no admin listener");
    let (status, text) = run(true).expect("an admin listener from the config file");
    assert_eq!(status, 200);
    assert_eq!(value(&parse(&text), "meshcheck_store_up", &[]), Some(1.0), "{text}");
}
