//! Operators' metrics: the registry behind `GET /metrics` on the admin
//! listener ([`super::admin`]), in the Prometheus text exposition format
//! (version 0.0.4), every name prefixed `meshcheck_`. docs/metrics.md lists
//! them.
//!
//! - Counted as things happen, through [`Metrics`] in the shared state
//!   (`state.metrics`): HTTP requests by route template, method and status,
//!   and their latency by route ([`Metrics::http_request`], called by
//!   [`super::auth::request_log`]); webhook attempts by outcome and messages
//!   given up; credits charged and refunded; lease takeovers.
//! - Read at scrape time, so they never drift from the truth: jobs by state
//!   and the queue's depth (the store's [`Store::job_counts`]), and the
//!   render workers started and retired (the worker pool's own counts; the
//!   renderer knows nothing of the server).
//!
//! Label values come from closed sets (the router's route templates, a
//! fixed list of methods, three-digit statuses, fixed outcomes and states),
//! so the number of series stays bounded whatever clients send.

use crate::render::worker::Pool;
use crate::store::Store;
use axum::http::Method;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use std::sync::Arc;
use std::time::Duration;

/// The exposition's `Content-Type`.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Upper bounds of the request-latency buckets, seconds: 1 ms to 60 s (a
/// synchronous validation of a large file takes tens of seconds).
pub const LATENCY_BUCKETS: [f64; 15] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// The route label of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// Job states always exposed, 0 when no job is in them.
const JOB_STATES: [&str; 4] = ["queued", "processing", "done", "failed"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

/// What one webhook attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookOutcome {
    /// The target answered 2xx.
    Delivered,
    /// The target answered, with another status.
    Rejected,
    /// No answer: refused, unreachable, timed out, or a target the fetch
    /// guard would not reach.
    Unreachable,
}

impl WebhookOutcome {
    fn label(self) -> &'static str {
        match self {
            WebhookOutcome::Delivered => "delivered",
            WebhookOutcome::Rejected => "rejected",
            WebhookOutcome::Unreachable => "unreachable",
        }
    }
}

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The server's metrics: the counters code increments, and the registry
/// that also reads the store and the render workers at scrape time.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    lease_takeovers: Counter,
    webhook_attempts: Family<OutcomeLabels, Counter>,
    webhook_given_up: Counter,
    credits_charged: Counter,
    credits_refunded: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    /// The metrics of a server over `store`, with the render worker pool
    /// when stills are drawn in worker processes.
    pub fn new(store: Arc<dyn Store>, pool: Option<Arc<Pool>>) -> Metrics {
        // Help texts end without a full stop: the encoder adds one.
        let mut registry = Registry::with_prefix("meshcheck");
        registry.register(
            "build",
            "The running build: its version",
            Info::new([("version", env!("CARGO_PKG_VERSION"))]),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template (\"unmatched\" when no route matched), method and status",
            requests.clone(),
        );
        let latency: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register_with_unit(
            "http_request_duration",
            "Time from a request's arrival to its response's headers, by route template",
            Unit::Seconds,
            latency.clone(),
        );
        let lease_takeovers = Counter::default();
        registry.register(
            "job_lease_takeovers",
            "Jobs this node took over from another whose lease on them had expired",
            lease_takeovers.clone(),
        );
        let webhook_attempts = Family::<OutcomeLabels, Counter>::default();
        for outcome in [WebhookOutcome::Delivered, WebhookOutcome::Rejected, WebhookOutcome::Unreachable] {
            let _ = webhook_attempts.get_or_create(&OutcomeLabels { outcome: outcome.label() });
        }
        registry.register(
            "webhook_attempts",
            "Webhook delivery attempts, by outcome: delivered (2xx), rejected (another status), unreachable (no answer)",
            webhook_attempts.clone(),
        );
        let webhook_given_up = Counter::default();
        registry.register(
            "webhook_messages_given_up",
            "Webhook messages given up: their attempts ran out, or their account is gone",
            webhook_given_up.clone(),
        );
        let credits_charged = Counter::default();
        registry.register(
            "credits_charged",
            "Credits charged to accounts (synchronous calls and queued jobs)",
            credits_charged.clone(),
        );
        let credits_refunded = Counter::default();
        registry.register(
            "credits_refunded",
            "Credits refunded to accounts (server faults, failed jobs)",
            credits_refunded.clone(),
        );
        registry.register_collector(Box::new(Live { store, pool }));
        Metrics {
            registry,
            requests,
            latency,
            lease_takeovers,
            webhook_attempts,
            webhook_given_up,
            credits_charged,
            credits_refunded,
        }
    }

    /// Counts one answered request: `route` is the matched route's template
    /// (`/v1/jobs/{id}`, never the path itself) or [`UNMATCHED`].
    pub fn http_request(&self, route: &str, method: &Method, status: u16, elapsed: Duration) {
        let labels =
            RequestLabels { route: route.to_string(), method: method_label(method), status: status.to_string() };
        self.requests.get_or_create(&labels).inc();
        self.latency.get_or_create(&RouteLabels { route: labels.route }).observe(elapsed.as_secs_f64());
    }

    /// Counts a job taken over from a node whose lease on it expired.
    pub fn lease_takeover(&self) {
        self.lease_takeovers.inc();
    }

    /// Counts one webhook delivery attempt.
    pub fn webhook_attempt(&self, outcome: WebhookOutcome) {
        self.webhook_attempts.get_or_create(&OutcomeLabels { outcome: outcome.label() }).inc();
    }

    /// Counts a webhook message given up (no more attempts).
    pub fn webhook_given_up(&self) {
        self.webhook_given_up.inc();
    }

    /// Counts credits charged (nothing for 0 or less).
    pub fn credits_charged(&self, credits: i64) {
        if credits > 0 {
            self.credits_charged.inc_by(credits as u64);
        }
    }

    /// Counts credits refunded (nothing for 0 or less).
    pub fn credits_refunded(&self, credits: i64) {
        if credits > 0 {
            self.credits_refunded.inc_by(credits as u64);
        }
    }

    /// The exposition: every metric, the scrape-time ones read now.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; the collectors report their own
        // trouble as metrics (`meshcheck_store_up`), never as an error.
        if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "could not encode the metrics");
        }
        out
    }
}

/// The method label: the standard methods by name, anything else "other"
/// (a client may send any token as a method).
fn method_label(m: &Method) -> &'static str {
    match *m {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}

/// What is read at scrape time: the store's job counts and the render
/// worker pool's counts.
struct Live {
    store: Arc<dyn Store>,
    pool: Option<Arc<Pool>>,
}

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Live")
    }
}

impl Collector for Live {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counts = self.store.job_counts();
        if let Err(e) = &counts {
            tracing::error!(error = %e, "metrics: could not count the jobs");
        }
        let up = ConstGauge::new(i64::from(counts.is_ok()));
        up.encode(encoder.encode_descriptor(
            "store_up",
            "1 when the store answered this scrape's queries, else 0 (and the job metrics are left out)",
            None,
            MetricType::Gauge,
        )?)?;
        if let Ok(counts) = counts {
            let mut states: Vec<(String, i64)> = JOB_STATES.iter().map(|s| (s.to_string(), 0)).collect();
            for (state, n) in counts {
                match states.iter_mut().find(|(s, _)| *s == state) {
                    Some(slot) => slot.1 = n,
                    None => states.push((state, n)),
                }
            }
            let mut family = encoder.encode_descriptor(
                "jobs",
                "Jobs in the store by state: queued, processing, done, failed",
                None,
                MetricType::Gauge,
            )?;
            for (state, n) in &states {
                let labels = [("state", state.as_str())];
                ConstGauge::new(*n).encode(family.encode_family(&labels)?)?;
            }
            let queued = states.iter().find(|(s, _)| s == "queued").map_or(0, |(_, n)| *n);
            ConstGauge::new(queued).encode(encoder.encode_descriptor(
                "job_queue_depth",
                "Jobs waiting for a worker (the queued state)",
                None,
                MetricType::Gauge,
            )?)?;
        }
        let (started, restarts, size, busy) = match &self.pool {
            Some(p) => (u64::from(p.started()), p.restarts(), p.size(), p.busy()),
            None => (0, Default::default(), 0, 0),
        };
        ConstGauge::new(size as i64).encode(encoder.encode_descriptor(
            "render_workers",
            "Render worker processes that may draw at once (--render-workers; 0 when stills are drawn in the server \
             process)",
            None,
            MetricType::Gauge,
        )?)?;
        ConstGauge::new(busy as i64).encode(encoder.encode_descriptor(
            "render_workers_busy",
            "Render workers serving a request now (requests beyond them wait their turn)",
            None,
            MetricType::Gauge,
        )?)?;
        ConstCounter::new(started).encode(encoder.encode_descriptor(
            "render_workers_started",
            "Render worker processes started (0 when stills are drawn in the server process)",
            None,
            MetricType::Counter,
        )?)?;
        let mut family = encoder.encode_descriptor(
            "render_worker_restarts",
            "Render workers retired to be replaced, by reason: renders (served its share), memory (passed its \
             limit), failed (a request failed or timed out), exited (died between requests)",
            None,
            MetricType::Counter,
        )?;
        for (reason, n) in [
            ("renders", restarts.renders),
            ("memory", restarts.memory),
            ("failed", restarts.failed),
            ("exited", restarts.exited),
        ] {
            ConstCounter::new(n).encode(family.encode_family(&[("reason", reason)])?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;

    fn metrics() -> Metrics {
        Metrics::new(Arc::new(SqliteStore::in_memory().unwrap()), None)
    }

    #[test]
    fn methods_outside_the_standard_set_share_one_label() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(method_label(&Method::from_bytes(b"BREW").unwrap()), "other");
    }

    #[test]
    fn requests_are_counted_by_template_and_timed_in_buckets() {
        let m = metrics();
        m.http_request("/v1/jobs/{id}", &Method::GET, 200, Duration::from_millis(3));
        m.http_request("/v1/jobs/{id}", &Method::GET, 200, Duration::from_secs(90));
        m.http_request(UNMATCHED, &Method::from_bytes(b"BREW").unwrap(), 404, Duration::from_micros(10));
        let text = m.encode();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(has(r#"meshcheck_http_requests_total{route="/v1/jobs/{id}",method="GET",status="200"} 2"#), "{text}");
        assert!(has(r#"meshcheck_http_requests_total{route="unmatched",method="other",status="404"} 1"#), "{text}");
        let bucket = |le: &str| {
            format!(r#"meshcheck_http_request_duration_seconds_bucket{{route="/v1/jobs/{{id}}",le="{le}"}}"#)
        };
        assert!(has(&format!("{} 0", bucket("0.0025"))), "3 ms is above 2.5 ms: {text}");
        assert!(has(&format!("{} 1", bucket("0.005"))), "{text}");
        assert!(has(&format!("{} 1", bucket("60"))), "90 s is above the last bound: {text}");
        assert!(has(&format!("{} 2", bucket("+Inf"))), "{text}");
        assert!(has(r#"meshcheck_http_request_duration_seconds_count{route="/v1/jobs/{id}"} 2"#), "{text}");
    }

    #[test]
    fn counters_count_credits_not_calls_and_every_state_is_exposed() {
        let m = metrics();
        m.credits_charged(3);
        m.credits_charged(0);
        m.credits_refunded(2);
        m.credits_refunded(-1);
        m.webhook_attempt(WebhookOutcome::Rejected);
        m.webhook_given_up();
        m.lease_takeover();
        let text = m.encode();
        let has = |line: &str| text.lines().any(|l| l == line);
        for line in [
            "meshcheck_credits_charged_total 3",
            "meshcheck_credits_refunded_total 2",
            r#"meshcheck_webhook_attempts_total{outcome="rejected"} 1"#,
            r#"meshcheck_webhook_attempts_total{outcome="delivered"} 0"#,
            "meshcheck_webhook_messages_given_up_total 1",
            "meshcheck_job_lease_takeovers_total 1",
            "meshcheck_store_up 1",
            r#"meshcheck_jobs{state="queued"} 0"#,
            r#"meshcheck_jobs{state="failed"} 0"#,
            "meshcheck_job_queue_depth 0",
            "meshcheck_render_workers_started_total 0",
            "meshcheck_render_workers 0",
            "meshcheck_render_workers_busy 0",
            r#"meshcheck_render_worker_restarts_total{reason="exited"} 0"#,
            concat!(r#"meshcheck_build_info{version=""#, env!("CARGO_PKG_VERSION"), r#""} 1"#),
        ] {
            assert!(has(line), "missing {line:?} in\n{text}");
        }
    }
}
