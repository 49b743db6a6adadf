//! Vision inspection against a fake provider: a real HTTP server on
//! 127.0.0.1 (port 0) in this process that speaks the chat-completions wire
//! format and returns scripted replies. Checks what the request carries
//! (images, schema, key), the envelope, the retry, the timeout and the codes.

use crate::util::bin;
use meshcheck::error::ErrorCode;
use meshcheck::render::STANDARD_ANGLES;
use meshcheck::vision::{self, Check, Config, Shot, Still};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted reply: HTTP status, body, and a delay before answering.
#[derive(Clone)]
pub(crate) struct Reply {
    status: u16,
    body: String,
    delay: Duration,
}

pub(crate) fn chat(content: &str) -> Reply {
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-vision-2026-11",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]
    });
    Reply { status: 200, body: body.to_string(), delay: Duration::ZERO }
}

/// A recorded request: headers (lower-case names) and the JSON body.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Value,
}

pub(crate) struct Fake {
    pub(crate) url: String,
    pub(crate) seen: Arc<Mutex<Vec<Seen>>>,
}

/// Starts the fake provider; replies are used in order (the last repeats).
pub(crate) fn fake(script: Vec<Reply>) -> Fake {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let mut headers = Vec::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                    break;
                }
                if let Some((k, v)) = h.trim_end().split_once(':') {
                    headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                }
            }
            let len: usize =
                headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
            let mut body = vec![0u8; len];
            let _ = reader.read_exact(&mut body);
            log.lock().unwrap().push(Seen {
                path,
                headers,
                body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            });
            let reply = script[n.min(script.len() - 1)].clone();
            std::thread::spawn(move || {
                std::thread::sleep(reply.delay);
                let reason = if reply.status == 200 { "OK" } else { "Error" };
                let _ = write!(
                    stream,
                    "HTTP/1.1 {} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                    reply.status,
                    reply.body.len(),
                    reply.body
                );
            });
        }
    });
    Fake { url, seen }
}

pub(crate) fn config(url: &str, timeout_s: f64) -> Config {
    Config {
        url: url.into(),
        model: "fake-vision".into(),
        api_key: Some("sk-test-123".into()),
        timeout: Duration::from_secs_f64(timeout_s),
        json_schema: true,
    }
}

/// The six standard stills as small solid PNGs.
fn stills() -> Vec<Still> {
    STANDARD_ANGLES
        .iter()
        .map(|(name, angle)| Still {
            shot: Shot { name: name.to_string(), angle: *angle, size: 16, path: None, url: None },
            png: meshcheck::render::image_out::png(&image::RgbaImage::from_pixel(
                16,
                16,
                image::Rgba([200, 30, 30, 255]),
            )),
        })
        .collect()
}

const VIS1_OK: &str = r#"{"matches": true, "confidence": "high", "observations": ["a red box"], "mismatches": []}"#;

#[test]
fn a_valid_answer_makes_the_envelope() {
    let f = fake(vec![chat(VIS1_OK)]);
    let check = Check::parse("VIS-001", Some("a red box"), None).unwrap();
    let a = vision::inspect(&config(&f.url, 10.0), &check, &stills()).unwrap();
    assert_eq!(a.schema_version, "1.2");
    assert!(a.inspect_id.is_none());
    assert!(!a.deterministic);
    assert_eq!(a.model, "fake-vision-2026-11", "the version the provider reports");
    assert_eq!(a.prompt_version, vision::PROMPT_VERSION);
    assert_eq!(a.check, "VIS-001");
    assert_eq!(a.question.as_deref(), Some("a red box"));
    assert_eq!(a.answer["matches"], true);
    assert_eq!(a.answer["confidence"], "high");
    assert_eq!(a.screenshots.len(), 6);
    let seen = f.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert!(req.headers.iter().any(|(k, v)| k == "authorization" && v == "Bearer sk-test-123"));
    assert_eq!(req.body["model"], "fake-vision");
    assert_eq!(req.body["response_format"]["type"], "json_schema");
    assert_eq!(req.body["response_format"]["json_schema"]["schema"], check.schema());
    let content = req.body["messages"][1]["content"].as_array().unwrap();
    let images: Vec<&str> =
        content.iter().filter(|p| p["type"] == "image_url").map(|p| p["image_url"]["url"].as_str().unwrap()).collect();
    assert_eq!(images.len(), 6);
    assert!(images.iter().all(|u| u.starts_with("data:image/png;base64,")));
    assert!(content[0]["text"].as_str().unwrap().contains("a red box"));
}

#[test]
fn an_invalid_answer_is_retried_once() {
    let f = fake(vec![chat("I think it is a chair."), chat(VIS1_OK)]);
    let check = Check::parse("VIS-001", Some("a red box"), None).unwrap();
    let a = vision::inspect(&config(&f.url, 10.0), &check, &stills()).unwrap();
    assert_eq!(a.answer["matches"], true);
    let seen = f.seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    // The retry shows the model its reply and what was wrong.
    let msgs = seen[1].body["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[2]["role"], "assistant");
    assert!(msgs[3]["content"].as_str().unwrap().contains("not valid"));
}

#[test]
fn always_invalid_is_inspect_unavailable_after_two_attempts() {
    // A numeric confidence, then an unknown field: both break the schema.
    let f = fake(vec![
        chat(r#"{"clean": true, "artifacts": [], "confidence": 0.8}"#),
        chat(r#"{"clean": true, "artifacts": [], "note": "x"}"#),
        chat(r#"{"clean": true, "artifacts": []}"#),
    ]);
    let e = vision::inspect(&config(&f.url, 10.0), &Check::Artifacts, &stills()).unwrap_err();
    assert_eq!(e.code, ErrorCode::InspectUnavailable);
    assert_eq!(e.detail.as_deref().unwrap()["reason"], "invalid_answer");
    assert_eq!(f.seen.lock().unwrap().len(), 2, "one retry, not more");
}

#[test]
fn server_errors_and_timeouts_are_inspect_unavailable() {
    let f = fake(vec![Reply { status: 500, body: r#"{"error":"boom"}"#.into(), delay: Duration::ZERO }]);
    let e = vision::inspect(&config(&f.url, 10.0), &Check::Artifacts, &stills()).unwrap_err();
    assert_eq!(e.code, ErrorCode::InspectUnavailable);
    assert_eq!(f.seen.lock().unwrap().len(), 2, "a 5xx is retried once");
    let unauthorised = fake(vec![Reply { status: 401, body: "{}".into(), delay: Duration::ZERO }]);
    let e = vision::inspect(&config(&unauthorised.url, 10.0), &Check::Artifacts, &stills()).unwrap_err();
    assert_eq!(e.detail.as_deref().unwrap()["reason"], "http_error");
    assert_eq!(unauthorised.seen.lock().unwrap().len(), 1, "a 4xx is final");
    let slow = fake(vec![Reply { delay: Duration::from_secs(3), ..chat(VIS1_OK) }]);
    let started = std::time::Instant::now();
    let check = Check::parse("VIS-001", Some("a box"), None).unwrap();
    let e = vision::inspect(&config(&slow.url, 0.5), &check, &stills()).unwrap_err();
    assert_eq!(e.code, ErrorCode::InspectUnavailable);
    assert_eq!(e.detail.as_deref().unwrap()["reason"], "timeout");
    assert!(started.elapsed() < Duration::from_secs(3), "gave up at the timeout");
}

#[test]
fn cli_inspect_env_usage_and_render_dir() {
    let dir = tempfile::tempdir().unwrap();
    for s in stills() {
        std::fs::write(dir.path().join(format!("{}.png", s.shot.name)), &s.png).unwrap();
    }
    let box_glb = crate::util::model("khronos-sample-models/Box.glb");
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = bin();
        c.args(args).env("MESHCHECK_CONFIG", dir.path().join("none.toml"));
        for k in ["MESHCHECK_VISION_URL", "MESHCHECK_VISION_MODEL", "MESHCHECK_VISION_API_KEY"] {
            c.env_remove(k);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // No provider: exit 4 naming the variables.
    let o = run(&["inspect", box_glb.to_str().unwrap(), "--check", "VIS-002"], &[]);
    assert_eq!(o.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&o.stderr).contains("MESHCHECK_VISION_URL"));
    // A missing prompt or question: exit 2, before anything else.
    assert_eq!(run(&["inspect", box_glb.to_str().unwrap(), "--check", "VIS-001"], &[]).status.code(), Some(2));
    assert_eq!(run(&["inspect", box_glb.to_str().unwrap(), "--check", "VIS-003"], &[]).status.code(), Some(2));
    // Reusing stills from a folder, against the fake provider.
    let f = fake(vec![chat(
        r#"{"answer": "A cube.", "confidence": "high", "evidence": [{"view": "front", "observation": "square"}]}"#,
    )]);
    let o = run(
        &["inspect", "--render-dir", dir.path().to_str().unwrap(), "--check", "VIS-003", "--question", "What is it?"],
        &[("MESHCHECK_VISION_URL", &f.url), ("MESHCHECK_VISION_MODEL", "m"), ("MESHCHECK_VISION_API_KEY", "k")],
    );
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["deterministic"], false);
    assert_eq!(v["check"], "VIS-003");
    assert_eq!(v["question"], "What is it?");
    assert_eq!(v["answer"]["answer"], "A cube.");
    assert_eq!(v["screenshots"].as_array().unwrap().len(), 6);
    assert!(v["inspect_id"].is_null());
}

#[test]
fn cli_inspect_renders_the_asset_when_no_stills_are_given() {
    let f = fake(vec![chat(VIS1_OK)]);
    let box_glb = crate::util::model("khronos-sample-models/Box.glb");
    let o = bin()
        .args(["inspect", box_glb.to_str().unwrap(), "--check", "VIS-001", "--prompt", "a red box"])
        .env("MESHCHECK_CONFIG", "/nonexistent/config.toml")
        .env("MESHCHECK_VISION_URL", &f.url)
        .env("MESHCHECK_VISION_MODEL", "m")
        .env_remove("MESHCHECK_VISION_API_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let seen = f.seen.lock().unwrap();
    // No key configured: no Authorization header.
    assert!(!seen[0].headers.iter().any(|(k, _)| k == "authorization"));
    // The stills are real 512x512 renders.
    let url = seen[0].body["messages"][1]["content"][2]["image_url"]["url"].as_str().unwrap().to_string();
    use base64::Engine as _;
    let png =
        base64::engine::general_purpose::STANDARD.decode(url.trim_start_matches("data:image/png;base64,")).unwrap();
    let img = image::load_from_memory(&png).unwrap();
    assert_eq!((img.width(), img.height()), (512, 512));
}
