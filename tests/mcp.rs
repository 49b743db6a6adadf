//! `meshcheck mcp` driven as an MCP client drives it: the binary spawned,
//! JSON-RPC 2.0 messages one per line on its standard input and output (the
//! stdio transport), the `initialize` handshake, `tools/list` and
//! `tools/call`; each answer compared with what the CLI prints for the same
//! request.

use crate::util::{self, model};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The protocol version this client asks for: the latest that begins with
/// `initialize`, as desktop clients speak it today.
const PROTOCOL: &str = "2025-06-18";

/// Longest wait for one answer (a debug build validating under load).
const ANSWER_WITHIN: Duration = Duration::from_secs(300);

/// A session with `meshcheck mcp`.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Responses read while waiting for another, by id.
    early: HashMap<u64, Value>,
}

impl Client {
    /// Starts the server and completes the handshake.
    fn start() -> Client {
        Client::start_with(|_| {})
    }

    /// Starts the server with its command adjusted (environment), then
    /// completes the handshake.
    fn start_with(adjust: impl FnOnce(&mut Command)) -> Client {
        let mut client = Client::spawn(adjust);
        let init = client.initialize();
        assert_eq!(init["protocolVersion"], PROTOCOL, "{init}");
        client
    }

    fn spawn(adjust: impl FnOnce(&mut Command)) -> Client {
        let mut cmd = util::bin();
        cmd.arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        adjust(&mut cmd);
        let mut child = cmd.spawn().expect("meshcheck mcp starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Client { child, stdin, lines, stderr, next_id: 1, early: HashMap::new() }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{message}").expect("the server reads its stdin");
        stdin.flush().unwrap();
    }

    /// Sends a request and returns its id.
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (notifications are passed over, and
    /// responses to other requests kept for later).
    fn response(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            if let Some(message) = self.early.remove(&id) {
                return message;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no answer to request {id} within {ANSWER_WITHIN:?}; stderr:\n{}",
                        self.stderr.lock().unwrap()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the server closed stdout before answering {id}; stderr:\n{}", self.stderr.lock().unwrap())
                }
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC messages ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if let Some(other) = message.get("id").and_then(Value::as_u64) {
                assert!(other < self.next_id, "an answer to a request never sent: {message}");
                self.early.insert(other, message);
            }
        }
    }

    /// Sends a request and returns its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    fn initialize(&mut self) -> Value {
        let response = self.request(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "meshcheck-tests", "version": "1.0.0"}
            }),
        );
        let result = response["result"].clone();
        assert!(result.is_object(), "initialize answers a result: {response}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    /// `tools/call`: the tool's result (a protocol error fails the test).
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(response.get("error").is_none(), "{name} answered a protocol error: {response}");
        response["result"].clone()
    }

    /// Closes the session (the server's stdin) and returns its exit status.
    fn close(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not exit when its stdin closed");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A successful tool result: not an error, its text the CLI's JSON, its
/// structured content an object. Returns the structured content and the text.
fn answer(result: &Value) -> (Value, String) {
    assert_eq!(result["isError"], false, "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text block first: {result}"));
    let structured = result["structuredContent"].clone();
    assert!(structured.is_object(), "structured content is an object: {result}");
    (structured, text.to_string())
}

/// A tool error: `isError`, the error envelope as structured content and as
/// text. Returns the envelope's `error`.
fn tool_error(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    let envelope = &result["structuredContent"];
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(&text, envelope);
    let error = envelope["error"].clone();
    assert!(error["code"].is_string() && error["message"].is_string(), "{result}");
    error
}

fn cli_json(args: &[&str]) -> (Option<i32>, Value) {
    let out = util::run(args);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    (out.status.code(), v)
}

fn path(rel: &str) -> String {
    model(rel).to_string_lossy().into_owned()
}

#[test]
fn handshake_lists_the_tools_with_their_input_schemas() {
    let mut client = Client::spawn(|_| {});
    let init = client.initialize();
    assert_eq!(init["protocolVersion"], PROTOCOL);
    assert_eq!(init["serverInfo"]["name"], "meshcheck");
    assert_eq!(init["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["instructions"].as_str().unwrap().contains("glTF"));

    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}")).clone();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    let mut want = vec!["checks", "compare", "validate"];
    if cfg!(feature = "render") {
        want.push("render");
    }
    if cfg!(all(feature = "render", feature = "vision")) {
        want.push("inspect");
    }
    want.sort();
    assert_eq!(names, want);
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(tool["description"].as_str().is_some_and(|d| d.len() > 40), "{name} is described");
        let schema = &tool["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}: {schema}");
        assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "{name}");
        assert_eq!(schema["additionalProperties"], false, "{name} refuses unknown arguments");
        let props = schema["properties"].as_object().unwrap_or_else(|| panic!("{name} has properties"));
        assert!(props.values().all(|p| p["description"].is_string()), "{name}: every argument is described");
        // The schema compiles as JSON Schema.
        jsonschema::validator_for(schema).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let schema_of = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["inputSchema"].clone();
    let validate = schema_of("validate");
    assert_eq!(validate["required"], json!(["path"]));
    for key in ["path", "profile", "overrides", "weld_tolerance", "only", "skip", "mode", "config", "no_config"] {
        assert!(validate["properties"][key].is_object(), "validate takes {key}");
    }
    let compare = schema_of("compare");
    let mut required: Vec<&str> = compare["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    required.sort();
    assert_eq!(required, ["new", "old"]);
    for key in ["old", "new", "tolerance", "profile", "overrides", "only", "skip", "mode", "config", "no_config"] {
        assert!(compare["properties"][key].is_object(), "compare takes {key}");
    }
    assert_eq!(schema_of("checks")["properties"]["profile"]["type"], json!(["string", "null"]));
    #[cfg(feature = "render")]
    {
        let render = schema_of("render");
        for key in ["path", "angles", "size", "background", "turntable", "out_dir", "images"] {
            assert!(render["properties"][key].is_object(), "render takes {key}");
        }
        // The documented default size is the renderer's.
        let size = render["properties"]["size"]["description"].as_str().unwrap();
        assert!(size.contains(&format!("[default: {}]", meshcheck::render::DEFAULT_SIZE)), "{size}");
    }
    assert!(client.close().success());
}

#[test]
fn validate_answers_the_report_the_cli_prints() {
    let mut client = Client::start();
    let avocado = path("khronos-sample-models/Avocado.zip");
    let fox = path("khronos-sample-models/Fox.glb");
    let cases: Vec<(Value, Vec<&str>)> = vec![
        // Defaults: the web profile, checks_only, the glTF-Validator.
        (json!({"path": fox}), vec![&fox]),
        // A profile, an override, a family skipped, a check selected by ID.
        (
            json!({"path": avocado, "profile": "mobile", "overrides": {"max_file_bytes": 20000000}, "skip": ["UV"]}),
            vec![&avocado, "--profile", "mobile", "--override", "max_file_bytes=20000000", "--skip", "UV"],
        ),
        (
            json!({"path": fox, "only": ["PERF-001", "GEO"], "weld_tolerance": 0.001}),
            vec![&fox, "--only", "PERF-001,GEO", "--weld-tolerance", "0.001"],
        ),
    ];
    for (args, flags) in cases {
        let (structured, text) = answer(&client.call("validate", args.clone()));
        let mut cli = vec!["validate", "--format", "json"];
        cli.extend(flags);
        let (_, want) = cli_json(&cli);
        assert_eq!(util::without_timestamps(structured.clone()), util::without_timestamps(want.clone()), "{args}");
        assert_eq!(structured["verdict"], want["verdict"]);
        assert_eq!(structured["checks"], want["checks"]);
        // The text is the same JSON, pretty-printed as the CLI prints it.
        let text_value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text_value, structured);
        assert!(text.ends_with("}\n"));
        util::assert_schema_valid(&structured);
    }
    // SPEC-001 ran (the validator pool started inside the server).
    let (structured, _) = answer(&client.call("validate", json!({"path": fox})));
    let spec = structured["checks"].as_array().unwrap().iter().find(|c| c["id"] == "SPEC-001").unwrap().clone();
    assert_ne!(spec["status"], "skipped", "{spec}");
    assert!(structured["validator"].is_object());
    assert!(client.close().success());
}

#[test]
fn validate_a_folder_answers_the_array_the_cli_prints() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(model("khronos-sample-models/Box.glb"), dir.path().join("box.glb")).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::copy(model("khronos-sample-models/Fox.glb"), dir.path().join("sub/fox.glb")).unwrap();
    std::fs::write(dir.path().join("broken.glb"), b"this is not a binary glTF").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"not an asset").unwrap();
    let folder = dir.path().to_str().unwrap();

    let mut client = Client::start();
    let (structured, text) = answer(&client.call("validate", json!({"path": folder})));
    let (_, want) = cli_json(&["validate", "--format", "json", folder]);
    let reports = structured["reports"].clone();
    assert_eq!(reports.as_array().unwrap().len(), 3, "{reports}");
    assert_eq!(util::without_timestamps(reports), util::without_timestamps(want.clone()));
    let text_value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(util::without_timestamps(text_value), util::without_timestamps(want.clone()));
    // A file that cannot be validated is an entry, not a tool error.
    let broken = want.as_array().unwrap().iter().find(|r| r.get("error").is_some()).unwrap();
    assert!(broken["file"].as_str().unwrap().ends_with("broken.glb"));

    // A folder without assets is the CLI's usage error.
    let empty = tempfile::tempdir().unwrap();
    let error = tool_error(&client.call("validate", json!({"path": empty.path()})));
    assert_eq!(error["code"], "BAD_REQUEST");
    assert!(error["message"].as_str().unwrap().contains("no .glb, .gltf or .zip files"), "{error}");
}

#[test]
fn errors_are_tool_errors_and_the_server_keeps_running() {
    let dir = tempfile::tempdir().unwrap();
    let mut client = Client::start();

    // A file that does not exist: BAD_REQUEST, as the CLI says it.
    let missing = dir.path().join("missing.glb");
    let error = tool_error(&client.call("validate", json!({"path": missing})));
    assert_eq!(error["code"], "BAD_REQUEST");
    assert!(error["message"].as_str().unwrap().starts_with("cannot read"), "{error}");

    // Files the engine refuses: the code and message `meshcheck validate` prints.
    let truncated = dir.path().join("truncated.gltf");
    std::fs::write(&truncated, br#"{"asset": {"version": "2.0"}, "meshes": [{"primitives": [{"attrib"#).unwrap();
    let notgltf = dir.path().join("picture.glb");
    std::fs::write(&notgltf, b"\x89PNG\r\n\x1a\n not a model").unwrap();
    for file in [&truncated, &notgltf] {
        let error = tool_error(&client.call("validate", json!({"path": file})));
        let (code, want) = cli_json(&["validate", "--format", "json", file.to_str().unwrap()]);
        assert_eq!(code, Some(3));
        assert_eq!(error["code"], want["error"]["code"]);
        assert_eq!(error["message"], want["error"]["message"]);
        assert!(["MALFORMED_GLTF", "UNSUPPORTED_FORMAT"].contains(&error["code"].as_str().unwrap()), "{error}");
    }

    // An unknown profile, in either tool: the catalog's message.
    let box_glb = path("khronos-sample-models/Box.glb");
    for (tool, args) in
        [("validate", json!({"path": box_glb, "profile": "console"})), ("checks", json!({"profile": "console"}))]
    {
        let error = tool_error(&client.call(tool, args));
        assert_eq!(error["code"], "BAD_REQUEST");
        assert!(error["message"].as_str().unwrap().contains("unknown profile `console`"), "{error}");
    }

    // Arguments the schema refuses, named; what the engine refuses, as on the CLI.
    let cases = [
        (json!({"path": box_glb, "mode": "fast"}), "unknown variant `fast`"),
        (json!({"profile": "web"}), "missing field `path`"),
        (json!({"path": box_glb, "paths": [box_glb]}), "unknown field `paths`"),
        (json!({"path": 3}), "invalid type"),
        (json!({"path": box_glb, "overrides": {"max_polys": 3}}), "unknown override key `max_polys`"),
        (json!({"path": box_glb, "overrides": {"max_tris": "many"}}), "needs a number"),
        (json!({"path": box_glb, "only": ["NOPE-001"]}), "unknown check or family `NOPE-001`"),
        (json!({"path": "-"}), "standard input"),
    ];
    for (args, says) in cases {
        let error = tool_error(&client.call("validate", args.clone()));
        assert_eq!(error["code"], "BAD_REQUEST", "{args}");
        assert!(error["message"].as_str().unwrap().contains(says), "{args}: {error}");
    }
    let error = tool_error(&client.call("validate", json!({"path": box_glb, "mode": "fast"})));
    assert_eq!(error["detail"]["field"], "mode");

    // A tool that does not exist is a protocol error (JSON-RPC), not a crash.
    let response = client.request("tools/call", json!({"name": "explode", "arguments": {}}));
    assert!(response["error"]["code"].is_i64(), "{response}");

    // Still serving; calls sent before any answer is read (as clients
    // pipeline them) are each answered under their own id.
    let fox = path("khronos-sample-models/Fox.glb");
    let ids = [
        client.send_request("tools/call", json!({"name": "validate", "arguments": {"path": fox}})),
        client.send_request("tools/call", json!({"name": "checks", "arguments": {}})),
        client.send_request("tools/call", json!({"name": "validate", "arguments": {"path": box_glb}})),
    ];
    let answers: Vec<Value> = ids.iter().map(|id| client.response(*id)["result"].clone()).collect();
    assert_eq!(answer(&answers[0]).0["input"]["filename"], "Fox.glb");
    assert!(answer(&answers[1]).0["checks"].is_array());
    assert_eq!(answer(&answers[2]).0["input"]["filename"], "Box.glb");
    assert!(client.close().success());
}

#[test]
fn checks_answers_the_catalog_the_cli_prints() {
    let mut client = Client::start();
    for (args, profile) in [(json!({}), None), (json!({"profile": "hero"}), Some("hero"))] {
        let (structured, text) = answer(&client.call("checks", args));
        let mut cli = vec!["checks", "--format", "json"];
        cli.extend(profile.iter().flat_map(|p| ["--profile", p]));
        let out = util::run(&cli);
        assert_eq!(out.status.code(), Some(0));
        // Byte for byte what the CLI prints.
        assert_eq!(text, String::from_utf8(out.stdout.clone()).unwrap());
        let want: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(structured["checks"], want);
        assert_eq!(structured["profile"], profile.unwrap_or("web"));
    }
}

#[cfg(feature = "render")]
#[test]
fn render_answers_png_stills_and_a_turntable() {
    use base64::Engine as _;
    let out_dir = tempfile::tempdir().unwrap();
    let mut client = Client::start();
    let result = client.call(
        "render",
        json!({
            "path": path("khronos-sample-models/Box.glb"),
            "angles": [{"rv": 30, "rh": 45}, {"rv": 0, "rh": 0}],
            "size": 128,
            "background": "transparent",
            "turntable": {"frames": 8, "size": 128},
            "out_dir": out_dir.path().join("stills"),
        }),
    );
    let (report, text) = answer(&result);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), report);
    assert_eq!(report["stats"]["views"], 2);
    assert_eq!(report["options"]["background"], "transparent");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 4, "text, two stills, the turntable");
    for (block, shot) in content[1..3].iter().zip(report["screenshots"].as_array().unwrap()) {
        assert_eq!(block["type"], "image");
        assert_eq!(block["mimeType"], "image/png");
        let png = base64::engine::general_purpose::STANDARD.decode(block["data"].as_str().unwrap()).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let img = image::load_from_memory(&png).unwrap();
        assert_eq!((img.width(), img.height()), (128, 128));
        // The same still was written into out_dir and listed.
        let written = std::fs::read(shot["path"].as_str().unwrap()).unwrap();
        assert_eq!(written, png);
    }
    assert_eq!(content[3]["mimeType"], "image/gif");
    let gif = base64::engine::general_purpose::STANDARD.decode(content[3]["data"].as_str().unwrap()).unwrap();
    assert!(gif.starts_with(b"GIF89a"));
    assert!(out_dir.path().join("stills/turntable.gif").is_file());

    // Without images: the report only; a request out of range is BAD_REQUEST.
    let result = client.call("render", json!({"path": path("khronos-sample-models/Box.glb"), "images": false}));
    let (report, _) = answer(&result);
    assert_eq!(report["stats"]["views"], 6);
    assert_eq!(report["options"]["size"], meshcheck::render::DEFAULT_SIZE);
    assert_eq!(result["content"].as_array().unwrap().len(), 1);
    let error = tool_error(&client.call("render", json!({"path": path("khronos-sample-models/Box.glb"), "size": 64})));
    assert_eq!(error["code"], "BAD_REQUEST");
    assert_eq!(error["detail"]["field"], "size");
    let error =
        tool_error(&client.call("render", json!({"path": path("khronos-sample-models/Box.glb"), "background": "red"})));
    assert_eq!(error["detail"]["field"], "background");
    assert!(client.close().success());
}

#[cfg(feature = "render")]
#[test]
fn full_mode_validate_answers_the_report_the_cli_prints() {
    let box_glb = path("khronos-sample-models/Box.glb");
    let mut client = Client::start();
    let (structured, _) = answer(&client.call("validate", json!({"path": box_glb, "mode": "full"})));
    let (_, want) = cli_json(&["validate", "--format", "json", "--mode", "full", &box_glb]);
    assert_eq!(structured["mode"], "full");
    let rnd = structured["checks"].as_array().unwrap().iter().find(|c| c["id"] == "RND-001").unwrap().clone();
    assert_ne!(rnd["status"], "skipped", "{rnd}");
    assert_eq!(util::without_timestamps(structured), util::without_timestamps(want));
}

#[cfg(all(feature = "render", feature = "vision"))]
#[test]
fn inspect_without_a_model_is_the_cli_error_and_with_one_answers() {
    let dir = tempfile::tempdir().unwrap();
    let no_config = dir.path().join("none.toml");
    let box_glb = path("khronos-sample-models/Box.glb");
    let unconfigured = |c: &mut Command| {
        c.env("MESHCHECK_CONFIG", &no_config);
        for k in ["MESHCHECK_VISION_URL", "MESHCHECK_VISION_MODEL", "MESHCHECK_VISION_API_KEY"] {
            c.env_remove(k);
        }
    };
    let mut client = Client::start_with(unconfigured);
    let args = json!({"path": box_glb, "check": "VIS-003", "question": "What is it?"});
    let error = tool_error(&client.call("inspect", args.clone()));
    assert_eq!(error["code"], "INSPECT_UNAVAILABLE");
    assert!(error["help"].as_str().unwrap().contains("MESHCHECK_VISION_URL"));
    // The CLI says the same, with the same hint.
    let mut cli = util::bin();
    cli.args(["inspect", &box_glb, "--check", "VIS-003", "--question", "What is it?"]);
    unconfigured(&mut cli);
    let out = cli.output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("INSPECT_UNAVAILABLE"), "{stderr}");
    assert!(stderr.contains(error["message"].as_str().unwrap()), "{stderr}");
    // A missing question is a usage error before the provider is asked for.
    let error = tool_error(&client.call("inspect", json!({"path": box_glb, "check": "VIS-003"})));
    assert_eq!(error["code"], "BAD_REQUEST");
    let error = tool_error(&client.call("inspect", json!({"check": "VIS-002"})));
    assert_eq!(error["detail"]["field"], "path");
    drop(client);

    // With a (fake) provider: the answer envelope, the stills drawn in the worker.
    let provider = crate::vision::fake(vec![crate::vision::chat(
        r#"{"answer": "A cube.", "confidence": "high", "evidence": [{"view": "front", "observation": "square"}]}"#,
    )]);
    let mut client = Client::start_with(|c| {
        unconfigured(c);
        c.env("MESHCHECK_VISION_URL", &provider.url).env("MESHCHECK_VISION_MODEL", "m");
    });
    let (answer_json, _) = answer(&client.call("inspect", args));
    assert_eq!(answer_json["check"], "VIS-003");
    assert_eq!(answer_json["answer"]["answer"], "A cube.");
    assert_eq!(answer_json["deterministic"], false);
    assert_eq!(answer_json["screenshots"].as_array().unwrap().len(), 6);
    let seen = provider.seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    let images = seen[0].body["messages"][1]["content"].as_array().unwrap().iter().filter(|p| p["type"] == "image_url");
    assert_eq!(images.count(), 6);
}

#[test]
fn compare_answers_the_comparison_the_cli_prints() {
    let mut client = Client::start();
    let boxed = path("khronos-sample-models/Box.glb");
    let man = path("khronos-sample-models/CesiumMan.glb");
    for (args, flags) in [
        (json!({"old": boxed, "new": man}), vec![]),
        (
            json!({"old": man, "new": boxed, "only": ["PERF"], "tolerance": 5}),
            vec!["--only", "PERF", "--tolerance", "5"],
        ),
    ] {
        let (structured, text) = answer(&client.call("compare", args.clone()));
        let mut cli = vec!["compare", "--format", "json", args["old"].as_str().unwrap(), args["new"].as_str().unwrap()];
        cli.extend(flags);
        let (code, want) = cli_json(&cli);
        assert_eq!(structured, want, "{args}");
        assert_eq!(code, Some(i32::from(want["worse"].as_bool().unwrap())), "`worse` is the CLI's exit code");
        let text_value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text_value, structured);
    }
    // A bigger mesh is worse; the reverse is not.
    let (worse, _) = answer(&client.call("compare", json!({"old": boxed, "new": man})));
    assert_eq!(worse["worse"], true, "{worse}");
    // A report JSON file is a side too.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("box.report.json");
    let out = util::run(&["validate", "--format", "json", &boxed]);
    std::fs::write(&report, &out.stdout).unwrap();
    let (c, _) = answer(&client.call("compare", json!({"old": report, "new": boxed})));
    assert_eq!(c["old"]["source"], "report");
    assert_eq!(c["worse"], false, "{c}");
    // Bad arguments are tool errors naming them.
    let error = tool_error(&client.call("compare", json!({"old": boxed, "new": man, "tolerance": -1})));
    assert_eq!(error["detail"]["field"], "tolerance", "{error}");
    let error = tool_error(&client.call("compare", json!({"old": boxed})));
    assert!(error["message"].as_str().unwrap().contains("missing field `new`"), "{error}");
    let error = tool_error(&client.call("compare", json!({"old": boxed, "new": man, "olde": 1})));
    assert!(error["message"].as_str().unwrap().contains("unknown field `olde`"), "{error}");
    assert!(client.close().success());
}

#[test]
fn validate_and_compare_read_meshcheck_toml_and_arguments_win() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(
        dir.path().join("meshcheck.toml"),
        "profile = \"mobile\"\n[[rules]]\npaths = [\"hero/**\"]\nprofile = \"hero\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("hero")).unwrap();
    let plain = dir.path().join("fox.glb");
    let hero = dir.path().join("hero/fox.glb");
    std::fs::copy(model("khronos-sample-models/Fox.glb"), &plain).unwrap();
    std::fs::copy(model("khronos-sample-models/Fox.glb"), &hero).unwrap();
    let mut client = Client::start();
    let profile = |v: &Value| v["profile"]["name"].as_str().unwrap_or_else(|| panic!("{v}")).to_string();
    let (r, _) = answer(&client.call("validate", json!({"path": plain, "only": ["PERF"]})));
    assert_eq!(profile(&r), "mobile");
    let (r, _) = answer(&client.call("validate", json!({"path": hero, "only": ["PERF"]})));
    assert_eq!(profile(&r), "hero");
    let (r, _) = answer(&client.call("validate", json!({"path": hero, "only": ["PERF"], "profile": "pc"})));
    assert_eq!(profile(&r), "pc", "an argument wins over the file");
    let (r, _) = answer(&client.call("validate", json!({"path": hero, "only": ["PERF"], "no_config": true})));
    assert_eq!(profile(&r), "web");
    // The folder: each file its own settings, as on the CLI.
    let (r, _) = answer(&client.call("validate", json!({"path": dir.path(), "only": ["PERF"]})));
    let (_, want) = cli_json(&["validate", "--format", "json", "--only", "PERF", dir.path().to_str().unwrap()]);
    assert_eq!(util::without_timestamps(r["reports"].clone()), util::without_timestamps(want));
    let names: Vec<String> = r["reports"].as_array().unwrap().iter().map(profile).collect();
    assert_eq!(names, ["mobile", "hero"]);
    // compare: each side its own settings.
    let (c, _) = answer(&client.call("compare", json!({"old": plain, "new": hero, "only": ["PERF"]})));
    assert_eq!((c["old"]["profile"].as_str(), c["new"]["profile"].as_str()), (Some("mobile"), Some("hero")));
    // Both `config` and `no_config` is refused.
    let other = dir.path().join("other.toml");
    std::fs::write(&other, "profile = \"pc\"\n").unwrap();
    let (r, _) = answer(&client.call("validate", json!({"path": plain, "only": ["PERF"], "config": other})));
    assert_eq!(profile(&r), "pc");
    let error = tool_error(&client.call("validate", json!({"path": plain, "config": other, "no_config": true})));
    assert_eq!(error["detail"]["field"], "no_config", "{error}");
    assert!(client.close().success());
}
