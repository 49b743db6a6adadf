//! `meshcheck serve`, issue 8: POST /v1/render (stills, blocks of six,
//! turntable jobs), stored screenshots behind signed URLs (tampering,
//! expiry, the janitor), full-mode validate with `screenshots`, POST
//! /v1/inspect against a fake vision provider on 127.0.0.1 (file and
//! render_id inputs, refunds, 404/410), the demo routes, and RENDER_FAILED
//! refunded when the binary has no graphics adapter.

use crate::serve::{Srv, box_glb, srv, srv_with, start, wait_job};
use crate::vision::{chat, fake};
use meshcheck::server::clock::Clock;
use meshcheck::store::{Blobs, DirBlobs, Store};
use serde_json::{Value, json};
use std::time::Duration;

const VIS2_OK: &str = r#"{"clean": true, "artifacts": []}"#;

fn shots_left(s: &Srv) -> Vec<String> {
    DirBlobs::new(s.dir.join("screenshots")).unwrap().ids().unwrap()
}

fn ledger(s: &Srv, key: &str) -> Vec<i64> {
    let a = s.store.account_for_key(key).unwrap().unwrap();
    let period = meshcheck::server::clock::period_start(a.created_at, s.clock.now());
    s.store.ledger(&a.id, period).unwrap().into_iter().map(|r| r.1).collect()
}

/// The path and query of a signed URL made with base http://meshcheck.test.
fn path_of(url: &Value) -> String {
    url.as_str().unwrap().strip_prefix("http://meshcheck.test").expect("a URL on the base").to_string()
}

fn vision_config(url: &str) -> meshcheck::vision::Config {
    crate::vision::config(url, 10.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_stills_are_charged_per_block_and_served_signed() {
    let s = srv();
    let (_, key) = s.account("free");
    let r = s.post_form("/v1/render", Some(&key), &box_glb(), &[("size", "128")]).await;
    let report = r.ok(200).clone();
    assert!(report["render_id"].as_str().unwrap().starts_with("rnd_"));
    assert!(report["expires_at"].as_str().is_some());
    let shots = report["screenshots"].as_array().unwrap();
    assert_eq!(shots.len(), 6);
    assert_eq!(shots[0]["name"], "front");
    assert_eq!(s.balance(&key).await, 300 - 2);
    for shot in shots {
        let img = s.get(&path_of(&shot["url"]), None).await;
        assert_eq!(img.status, 200);
        assert_eq!(img.headers["content-type"], "image/png");
        assert_eq!(&img.bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(image::load_from_memory(&img.bytes).unwrap().width(), 128);
    }
    // Seven views start a second block of six.
    let seven = serde_json::to_string(&(0..7).map(|i| json!({"rv": 10, "rh": i * 40})).collect::<Vec<_>>()).unwrap();
    let r = s.post_form("/v1/render", Some(&key), &box_glb(), &[("size", "128"), ("angles", &seven)]).await;
    assert_eq!(r.ok(200)["screenshots"].as_array().unwrap().len(), 7);
    assert_eq!(s.balance(&key).await, 300 - 2 - 4);

    // Tampering: another expiry, another file, another signature, none.
    let url = path_of(&shots[0]["url"]);
    let (file, query) = url.split_once('?').unwrap();
    let exp: i64 = query.split('&').find_map(|kv| kv.strip_prefix("exp=")).unwrap().parse().unwrap();
    let sig = query.split('&').find_map(|kv| kv.strip_prefix("sig=")).unwrap();
    let other_file = path_of(&shots[1]["url"]).split_once('?').unwrap().0.to_string();
    for bad in [
        format!("{file}?exp={}&sig={sig}", exp + 86_400),
        format!("{other_file}?exp={exp}&sig={sig}"),
        format!("{file}?exp={exp}&sig={}", sig.replace(&sig[..4], "AAAA")),
        format!("{file}?exp={exp}"),
        file.to_string(),
        format!("{}?exp={exp}&sig={sig}", file.replace(".png", ".gif")),
    ] {
        s.get(&bad, None).await.expect(404, "NOT_FOUND");
    }
    // 30 days on: the URL is refused with 410 and the janitor deletes every file.
    assert_eq!(shots_left(&s).len(), 13);
    s.clock.advance(30 * 86_400);
    s.get(&url, None).await.expect(410, "REPORT_EXPIRED");
    meshcheck::server::janitor::janitor_pass(&s.state);
    assert!(shots_left(&s).is_empty(), "stills are deleted with their render");
    s.get(&url, None).await.expect(410, "REPORT_EXPIRED");
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn render_requests_outside_the_bounds_cost_nothing() {
    let s = srv();
    let (_, key) = s.account("scale");
    let thirteen = serde_json::to_string(&vec![json!({"rv": 0, "rh": 0}); 13]).unwrap();
    for fields in [
        vec![("angles", thirteen.as_str())],
        vec![("angles", "[]")],
        vec![("angles", r#"[{"rv": 95, "rh": 0}]"#)],
        vec![("angles", r#"[{"rv": 0, "rh": -1}]"#)],
        vec![("angles", "front")],
        vec![("size", "127")],
        vec![("size", "1025")],
        vec![("size", "big")],
        vec![("background", "red")],
        vec![("lighting", "dramatic")],
        vec![("turntable", r#"{"frames": 36, "format": "mp4", "size": 512}"#)],
        vec![("turntable", r#"{"frames": 200}"#)],
        vec![("turntable", r#"{"size": 64}"#)],
        vec![("colour", "blue")],
        vec![("url", "http://example.com/a.glb")],
    ] {
        s.post_form("/v1/render", Some(&key), &box_glb(), &fields).await.expect(400, "BAD_REQUEST");
    }
    s.post_json("/v1/render", &key, json!({"angles": [{"rv": 0, "rh": 0}]})).await.expect(400, "BAD_REQUEST");
    s.post_json("/v1/render", &key, json!({"blob_id": "blob_x", "turntable": {"format": "mp4"}}))
        .await
        .expect(400, "BAD_REQUEST");
    s.post_form("/v1/render", Some(&key), b"solid cube\nendsolid\n", &[]).await.expect(415, "UNSUPPORTED_FORMAT");
    let mut broken = box_glb();
    broken.truncate(broken.len() / 2);
    s.post_form("/v1/render", Some(&key), &broken, &[]).await.expect(422, "MALFORMED_GLTF");
    s.post_json("/v1/render", &key, json!({"blob_id": "blob_nope"})).await.expect(404, "NOT_FOUND");
    s.post_form("/v1/render", None, &box_glb(), &[]).await.expect(401, "MISSING_API_KEY");
    assert!(ledger(&s, &key).is_empty(), "nothing charged: {:?}", ledger(&s, &key));
    assert!(shots_left(&s).is_empty());
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turntable_is_a_job_with_a_signed_gif() {
    let s = srv();
    let (_, key) = s.account("free");
    let run = start(&s).await;
    let r = s
        .post_form(
            "/v1/render",
            Some(&key),
            &box_glb(),
            &[("size", "128"), ("turntable", r#"{"frames": 8, "size": 128, "format": "gif"}"#)],
        )
        .await;
    let env = r.ok(202).clone();
    let job = env["job_id"].as_str().unwrap();
    assert_eq!(wait_job(&s, &key, job, |st| st == "done" || st == "failed").await, "done");
    let env = s.get(&format!("/v1/jobs/{job}"), Some(&key)).await.ok(200).clone();
    let report = &env["result"];
    assert!(report["render_id"].as_str().unwrap().starts_with("rnd_"));
    assert_eq!(report["turntable"]["frames"], 8);
    let gif = s.get(&path_of(&report["turntable"]["url"]), None).await;
    assert_eq!(gif.status, 200);
    assert_eq!(gif.headers["content-type"], "image/gif");
    assert_eq!(&gif.bytes[..6], b"GIF89a");
    assert_eq!(report["screenshots"].as_array().unwrap().len(), 6);
    assert_eq!(ledger(&s, &key), vec![4], "a turntable with six stills costs 4");
    run.stop().await;
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_validate_with_screenshots_stores_the_stills() {
    let s = srv();
    let (_, key) = s.account("free");
    s.post_file(&key, &box_glb(), &[("screenshots", "true")]).await.expect(400, "BAD_REQUEST");
    let plain = s.post_file(&key, &box_glb(), &[("mode", "full")]).await.ok(200).clone();
    assert!(plain["screenshots"].is_null(), "stills are stored only when asked for");
    assert!(shots_left(&s).is_empty());
    let report = s.post_file(&key, &box_glb(), &[("mode", "full"), ("screenshots", "true")]).await.ok(200).clone();
    let shots = report["screenshots"].as_array().unwrap();
    assert_eq!(shots.len(), 6);
    assert!(shots.iter().all(|sh| sh["visible_pct"].as_f64().unwrap() > 0.0));
    let img = s.get(&path_of(&shots[5]["url"]), None).await;
    assert_eq!((img.status.as_u16(), img.headers["content-type"].to_str().unwrap()), (200, "image/png"));
    let again = s.get(&format!("/v1/reports/{}", report["report_id"].as_str().unwrap()), Some(&key)).await;
    assert_eq!(again.ok(200)["screenshots"], report["screenshots"]);
    assert_eq!(s.balance(&key).await, 300 - 4);
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_refuses_bad_requests_and_needs_a_provider() {
    let s = srv();
    let (_, key) = s.account("free");
    let cases: Vec<Vec<(&str, &str)>> = vec![
        vec![],
        vec![("check", "VIS-009")],
        vec![("check", "VIS-001")],
        vec![("check", "VIS-003")],
        vec![("check", "VIS-002"), ("prompt", "a box")],
        vec![("check", "VIS-002"), ("render_id", "rnd_x")],
        vec![("check", "VIS-002"), ("size", "512")],
    ];
    for fields in cases {
        s.post_form("/v1/inspect", Some(&key), &box_glb(), &fields).await.expect(400, "BAD_REQUEST");
    }
    s.post_json("/v1/inspect", &key, json!({"check": "VIS-002"})).await.expect(400, "BAD_REQUEST");
    let r = s.post_form("/v1/inspect", Some(&key), &box_glb(), &[("check", "VIS-002")]).await;
    r.expect(503, "INSPECT_UNAVAILABLE");
    assert!(ledger(&s, &key).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_answers_from_fresh_and_stored_renders_and_refunds_invalid_answers() {
    let model = fake(vec![chat(VIS2_OK)]);
    let s = srv_with(|c| c.vision = Some(vision_config(&model.url)));
    let (_, key) = s.account("free");
    let (_, other) = s.account("free");
    // A file: rendered fresh, stills stored under the inspection.
    let r = s.post_form("/v1/inspect", Some(&key), &box_glb(), &[("check", "VIS-002")]).await;
    let env = r.ok(200).clone();
    assert!(env["inspect_id"].as_str().unwrap().starts_with("ins_"));
    assert_eq!((env["deterministic"].clone(), env["check"].clone()), (json!(false), json!("VIS-002")));
    assert_eq!(env["model"], "fake-vision-2026-11");
    assert_eq!(env["answer"], serde_json::from_str::<Value>(VIS2_OK).unwrap());
    let shots = env["screenshots"].as_array().unwrap();
    assert_eq!(shots.len(), 6);
    assert_eq!(s.get(&path_of(&shots[0]["url"]), None).await.status, 200);
    let seen = model.seen.lock().unwrap().clone();
    let images =
        seen[0].body["messages"][1]["content"].as_array().unwrap().iter().filter(|p| p["type"] == "image_url").count();
    assert_eq!(images, 6);
    assert_eq!(ledger(&s, &key), vec![8]);

    // A prior render's stored stills (reduced to 512 px for the model).
    let render = s.post_form("/v1/render", Some(&key), &box_glb(), &[("size", "1024")]).await.ok(200).clone();
    let rid = render["render_id"].as_str().unwrap();
    let env = s.post_json("/v1/inspect", &key, json!({"check": "VIS-002", "render_id": rid})).await.ok(200).clone();
    assert_eq!(env["screenshots"][0]["url"], render["screenshots"][0]["url"], "the stored stills are reused");
    assert_eq!(env["screenshots"][0]["size"], 512);
    assert_eq!(ledger(&s, &key), vec![8, 2, 8]);
    // Unknown, another account's, a report without stills: 404, nothing charged.
    s.post_json("/v1/inspect", &key, json!({"check": "VIS-002", "render_id": "rnd_unknown"}))
        .await
        .expect(404, "NOT_FOUND");
    s.post_json("/v1/inspect", &other, json!({"check": "VIS-002", "render_id": rid})).await.expect(404, "NOT_FOUND");
    let plain = s.post_file(&key, &box_glb(), &[]).await.ok(200).clone();
    let pid = plain["report_id"].as_str().unwrap();
    s.post_json("/v1/inspect", &key, json!({"check": "VIS-002", "render_id": pid})).await.expect(404, "NOT_FOUND");
    assert_eq!(ledger(&s, &key), vec![8, 2, 8, 1]);
    // Expired: 410.
    s.clock.advance(30 * 86_400 + 1);
    meshcheck::server::janitor::janitor_pass(&s.state);
    s.post_json("/v1/inspect", &key, json!({"check": "VIS-002", "render_id": rid})).await.expect(410, "REPORT_EXPIRED");
    assert!(shots_left(&s).is_empty());
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_without_a_valid_answer_is_refunded() {
    let model = fake(vec![chat("not json at all")]);
    let s = srv_with(|c| c.vision = Some(vision_config(&model.url)));
    let (_, key) = s.account("free");
    let r = s
        .post_form("/v1/inspect", Some(&key), &box_glb(), &[("check", "VIS-003"), ("question", "How many legs?")])
        .await;
    r.expect(503, "INSPECT_UNAVAILABLE");
    assert_eq!(model.seen.lock().unwrap().len(), 2, "one retry");
    assert_eq!(ledger(&s, &key), vec![8, -8], "charged, then refunded");
    assert_eq!(s.balance(&key).await, 300);
    assert!(shots_left(&s).is_empty(), "the stills of a failed inspection are not kept");
    s.assert_no_blobs();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_page_and_its_endpoint() {
    let s = srv_with(|c| c.demo_per_min = 3);
    let page = s.get("/", None).await;
    assert_eq!(page.status, 200);
    assert!(page.headers["content-type"].to_str().unwrap().starts_with("text/html"));
    assert!(page.headers["content-security-policy"].to_str().unwrap().contains("default-src 'none'"));
    let html = String::from_utf8_lossy(&page.bytes);
    assert!(html.contains("/demo/validate") && !html.contains("mk_demo_"));
    let claim = format!("{} checks, measured against a budget", meshcheck::checks::catalog::CATALOG.len());
    assert!(html.contains(&claim), "the page's check count follows the catalog ({claim})");

    let r = s.post_form("/demo/validate", None, &box_glb(), &[]).await;
    let report = r.ok(200).clone();
    assert_eq!(report["mode"], "full");
    // A key begins with one of the store's prefixes; a bare "mk_" can come
    // by chance inside a base64 still or a random id (it did, once in CI).
    let answer = String::from_utf8_lossy(&r.bytes);
    for prefix in [meshcheck::store::LIVE_KEY_PREFIX, meshcheck::store::DEMO_KEY_PREFIX] {
        assert!(!answer.contains(prefix), "no key in the answer");
    }
    let shots = report["screenshots"].as_array().unwrap();
    assert_eq!(shots.len(), 6);
    // Watermarked: the demo still differs from the same view without the mark.
    let demo_png = s.get(&path_of(&shots[0]["url"]), None).await.bytes;
    let (_, key) = s.account("free");
    let own = s.post_file(&key, &box_glb(), &[("mode", "full"), ("screenshots", "true")]).await.ok(200).clone();
    let own_png = s.get(&path_of(&own["screenshots"][0]["url"]), None).await.bytes;
    let (a, b) =
        (image::load_from_memory(&demo_png).unwrap().to_rgba8(), image::load_from_memory(&own_png).unwrap().to_rgba8());
    assert_eq!(a.dimensions(), b.dimensions());
    let differing = a.pixels().zip(b.pixels()).filter(|(p, q)| p != q).count();
    assert!(differing > 100, "the watermark changes the still ({differing} pixels)");
    // The demo account was charged, through its mk_demo_ key.
    let demo = s.store.accounts().unwrap().into_iter().find(|a| a.plan == "scale").unwrap();
    assert!(s.store.keys(&demo.id).unwrap().iter().any(|k| k.prefix.starts_with("mk_demo_") && k.revoked_at.is_none()));
    assert!(
        s.store
            .keys(&demo.id)
            .unwrap()
            .iter()
            .filter(|k| k.revoked_at.is_none())
            .all(|k| k.prefix.starts_with("mk_demo_"))
    );

    // 4.4 MB cap: 413 with the figures; then the per-IP limit (3 here).
    let big = crate::testkit::padded_glb(5_000_000);
    let r = s.post_form("/demo/validate", None, &big, &[]).await;
    r.expect(413, "FILE_TOO_LARGE");
    assert_eq!(r.json["error"]["detail"]["max_bytes"], 4_400_000);
    let r = s.post_form("/demo/validate", None, b"hello", &[]).await;
    r.expect(415, "UNSUPPORTED_FORMAT");
    let r = s.post_form("/demo/validate", None, &box_glb(), &[]).await;
    r.expect(429, "RATE_LIMITED");
    assert!(r.headers.contains_key("retry-after"));
    s.assert_no_blobs();
}

/// A server whose renderer has no adapter: the render is charged once the
/// input loads, fails with 502 RENDER_FAILED, and is refunded.
#[test]
fn render_failed_is_502_and_refunded() {
    use crate::support::serve_process::{create_account, serve_command, start};
    let dir = tempfile::tempdir().unwrap();
    let key = create_account(dir.path(), "free", &[]).unwrap().key;
    let mut cmd = serve_command(dir.path());
    cmd.env("WGPU_BACKEND", "vulkan")
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env_remove("MESHCHECK_VISION_URL");
    let mut server = start(cmd, Duration::from_secs(60)).unwrap();
    let addr = server.addr.clone();
    let http = reqwest::blocking::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let (ctype, body) = crate::support::multipart::upload(&box_glb(), &[]);
    let r = http
        .post(format!("http://{addr}/v1/render"))
        .header("x-api-key", &key)
        .header("content-type", ctype)
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status(), 502);
    let body: Value = r.json().unwrap();
    assert_eq!(body["error"]["code"], "RENDER_FAILED");
    let account: Value =
        http.get(format!("http://{addr}/v1/account")).header("x-api-key", &key).send().unwrap().json().unwrap();
    assert_eq!(account["balance"], 300, "refunded");
    assert_eq!(account["usage"]["credits_used"], 0);
    assert!(server.stop(Duration::from_secs(60)).unwrap().success());
    let store = meshcheck::store::sqlite::SqliteStore::open(&dir.path().join("meshcheck.sqlite")).unwrap();
    let acct = store.account_for_key(&key).unwrap().unwrap();
    let rows: Vec<i64> = store.ledger(&acct.id, acct.created_at).unwrap().into_iter().map(|r| r.1).collect();
    assert_eq!(rows, vec![2, -2], "charged once the input loaded, then refunded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_limits_can_be_turned_off_but_credits_still_apply() {
    let s = srv_with(|c| c.rate_limits = false);
    let (_, key) = s.account("free");
    for _ in 0..15 {
        let r = s.get("/v1/account", Some(&key)).await;
        assert_eq!(r.status, 200, "free allows 10 per minute with limits on");
    }
    for _ in 0..15 {
        assert_eq!(s.get("/v1/schema/report.json", None).await.status, 200);
    }
    s.post_file(&key, &box_glb(), &[]).await.ok(200);
    assert_eq!(ledger(&s, &key), vec![1]);
}

use meshcheck::render::worker::Restarts;

fn worker_srv(renders: u32) -> Srv {
    let exe = std::path::PathBuf::from(env!("CARGO_BIN_EXE_meshcheck"));
    let limits = meshcheck::render::worker::Limits { renders, rss_bytes: 4 << 30, timeout: Duration::from_secs(120) };
    srv_with(|c| c.render_worker = Some((exe, limits)))
}

fn pool(s: &Srv) -> std::sync::Arc<meshcheck::render::worker::Pool> {
    match &s.state.drawer {
        meshcheck::render::Drawer::Worker(p) => p.clone(),
        meshcheck::render::Drawer::Local => panic!("this server draws in process"),
    }
}

/// The worker process draws exactly what the server would draw itself, is
/// replaced after its share of renders, and a killed worker costs one
/// request at most (here none: it dies between requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_render_worker_draws_the_same_stills_and_is_replaced() {
    let local = srv();
    let (_, lkey) = local.account("scale");
    let w = worker_srv(2);
    let (_, key) = w.account("scale");
    let fields = [("size", "128"), ("background", "transparent")];
    let mine = local.post_form("/v1/render", Some(&lkey), &box_glb(), &fields).await.ok(200).clone();
    let theirs = w.post_form("/v1/render", Some(&key), &box_glb(), &fields).await.ok(200).clone();
    assert_eq!(mine["renderer"], theirs["renderer"], "the same adapter");
    assert_eq!(mine["stats"]["triangles"], theirs["stats"]["triangles"]);
    for (a, b) in mine["screenshots"].as_array().unwrap().iter().zip(theirs["screenshots"].as_array().unwrap()) {
        assert_eq!(a["visible_pct"], b["visible_pct"]);
        let pa = local.get(&path_of(&a["url"]), None).await.bytes;
        let pb = w.get(&path_of(&b["url"]), None).await.bytes;
        assert_eq!(pa, pb, "{}: the worker's PNG is byte-identical", a["name"]);
    }
    let p = pool(&w);
    assert_eq!(p.started(), 1);
    // Full-mode validation through the worker: the RND checks ran on its stills.
    let report = w.post_file(&key, &box_glb(), &[("mode", "full"), ("screenshots", "true")]).await.ok(200).clone();
    let rnd: Vec<&Value> =
        report["checks"].as_array().unwrap().iter().filter(|c| c["id"].as_str().unwrap().starts_with("RND-")).collect();
    assert!(rnd.len() == 3 && rnd.iter().all(|c| c["status"] == "pass"), "{rnd:?}");
    assert_eq!(p.pid(), None, "replaced after 2 renders");
    assert_eq!(p.restarts(), Restarts { renders: 1, ..Restarts::default() });
    // A worker killed between requests: the next request starts another.
    w.post_form("/v1/render", Some(&key), &box_glb(), &fields).await.ok(200);
    let pid = p.pid().expect("a live worker");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    // "Between requests": wait until the kernel has finished the process (a
    // zombie, or gone), which takes longer than a fixed pause on a busy machine.
    let dead = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')))
    };
    let started = std::time::Instant::now();
    while !dead(pid) && started.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    w.post_form("/v1/render", Some(&key), &box_glb(), &fields).await.ok(200);
    assert_eq!(p.started(), 3);
    // The killed worker is counted once: as exited when it was found dead
    // before the request, as failed when it was still dying (a process
    // with many threads takes a while to be reaped, zombie leader or not).
    let r = p.restarts();
    assert_eq!((r.renders, r.memory, r.exited + r.failed), (1, 0, 1), "{r:?}");
    // The operators' metrics read the same counts.
    let text = w.state.metrics.encode();
    for line in [
        "meshcheck_render_workers_started_total 3".to_string(),
        r#"meshcheck_render_worker_restarts_total{reason="renders"} 1"#.to_string(),
        format!(r#"meshcheck_render_worker_restarts_total{{reason="exited"}} {}"#, r.exited),
        format!(r#"meshcheck_render_worker_restarts_total{{reason="failed"}} {}"#, r.failed),
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line:?} in\n{text}");
    }
    // A turntable through the worker.
    let run = start(&w).await;
    let env = w
        .post_form(
            "/v1/render",
            Some(&key),
            &box_glb(),
            &[("size", "128"), ("turntable", r#"{"frames": 8, "size": 128}"#)],
        )
        .await
        .ok(202)
        .clone();
    let job = env["job_id"].as_str().unwrap();
    assert_eq!(wait_job(&w, &key, job, |st| st == "done" || st == "failed").await, "done");
    run.stop().await;
    w.assert_no_blobs();
}
