//! Vision inspection: the one non-deterministic surface. A vision model
//! behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
//! Ollama, LM Studio, OpenRouter, ...) answers a question about the six
//! standard renders; the answer is checked against the check's schema here,
//! whatever the provider promised.
//!
//! - [`Config`]: `MESHCHECK_VISION_URL` (base URL; `/chat/completions` is
//!   appended), `MESHCHECK_VISION_MODEL`, `MESHCHECK_VISION_API_KEY` (Bearer),
//!   `MESHCHECK_VISION_TIMEOUT` (seconds, default 60) and
//!   `MESHCHECK_VISION_RESPONSE_FORMAT` (`json_schema`, the default, or `off`
//!   for providers without structured output), or the same keys in the
//!   `[vision]` table of a config file (`MESHCHECK_CONFIG`, else
//!   `$XDG_CONFIG_HOME/meshcheck/config.toml`, else
//!   `~/.config/meshcheck/config.toml`). The environment wins.
//! - [`inspect`]: sends the stills as PNG data URLs with the check's
//!   versioned prompt and schema; one retry after an invalid reply (or a
//!   5xx), then INSPECT_UNAVAILABLE.
//! - Vision answers never appear in a validate report.

pub mod answers;

use crate::error::{Error, ErrorCode, Result};
use crate::report::views::Angle;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::time::Duration;

/// Version of the prompts below; bumped whenever their wording changes.
pub const PROMPT_VERSION: u32 = 1;
/// Default request timeout.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Size of the stills sent to the model.
pub const STILL_SIZE: u32 = 512;
/// Longest prompt or question accepted, in characters.
pub const MAX_TEXT_CHARS: usize = 2000;
/// Largest reply body read from the provider.
const MAX_REPLY_BYTES: u64 = 4 << 20;

/// Where the vision model lives.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Base URL, e.g. `http://localhost:11434/v1`.
    pub url: String,
    /// Model name as the provider knows it.
    pub model: String,
    /// Sent as `Authorization: Bearer KEY` when set.
    pub api_key: Option<String>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Ask for `response_format: json_schema` (off for providers without it).
    pub json_schema: bool,
}

/// The `[vision]` table of the config file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileVision {
    url: Option<String>,
    model: Option<String>,
    api_key: Option<String>,
    timeout_s: Option<f64>,
    response_format: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    #[serde(default)]
    vision: FileVision,
}

/// The variables to set, for error messages.
pub const SETUP_HELP: &str = "set MESHCHECK_VISION_URL (an OpenAI-compatible base URL such as http://localhost:11434/v1 or https://api.openai.com/v1) and MESHCHECK_VISION_MODEL, plus MESHCHECK_VISION_API_KEY for hosted providers; or put url, model and api_key in the [vision] table of ~/.config/meshcheck/config.toml";

impl Config {
    /// Reads the configuration from the environment and the config file.
    /// Nothing configured is INSPECT_UNAVAILABLE naming what to set.
    pub fn from_env() -> Result<Config> {
        Config::resolve(&|k| std::env::var(k).ok().filter(|v| !v.is_empty()), config_path().as_deref())
    }

    /// [`Config::from_env`] with the environment and the file path given.
    pub fn resolve(env: &dyn Fn(&str) -> Option<String>, file: Option<&std::path::Path>) -> Result<Config> {
        let from_file: FileVision = match file {
            Some(p) if p.is_file() => {
                let text = std::fs::read_to_string(p)
                    .map_err(|e| Error::bad_request(format!("cannot read {}: {e}", p.display())))?;
                toml::from_str::<FileConfig>(&text)
                    .map_err(|e| Error::bad_request(format!("{}: {e}", p.display())))?
                    .vision
            }
            _ => FileVision::default(),
        };
        let url = env("MESHCHECK_VISION_URL").or(from_file.url);
        let model = env("MESHCHECK_VISION_MODEL").or(from_file.model);
        let (Some(url), Some(model)) = (url, model) else {
            return Err(
                Error::new(ErrorCode::InspectUnavailable, "no vision model is configured").with_help(SETUP_HELP)
            );
        };
        let timeout_s = match env("MESHCHECK_VISION_TIMEOUT") {
            Some(t) => t
                .parse::<f64>()
                .map_err(|_| Error::bad_request(format!("MESHCHECK_VISION_TIMEOUT={t} is not a number of seconds")))?,
            None => from_file.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S),
        };
        if !(timeout_s > 0.0 && timeout_s <= 3600.0) {
            return Err(Error::bad_request(format!("the vision timeout must be 0 to 3600 seconds, got {timeout_s}")));
        }
        let format = env("MESHCHECK_VISION_RESPONSE_FORMAT").or(from_file.response_format);
        let json_schema = match format.as_deref() {
            None | Some("json_schema") => true,
            Some("off") => false,
            Some(other) => {
                return Err(Error::bad_request(format!(
                    "MESHCHECK_VISION_RESPONSE_FORMAT must be json_schema or off, got {other}"
                )));
            }
        };
        Ok(Config {
            url: url.trim_end_matches('/').to_string(),
            model,
            api_key: env("MESHCHECK_VISION_API_KEY").or(from_file.api_key),
            timeout: Duration::from_secs_f64(timeout_s),
            json_schema,
        })
    }
}

/// The config file: `$MESHCHECK_CONFIG`, else `$XDG_CONFIG_HOME/meshcheck/config.toml`, else `~/.config/meshcheck/config.toml`.
pub fn config_path() -> Option<std::path::PathBuf> {
    if let Some(p) = std::env::var_os("MESHCHECK_CONFIG") {
        return Some(p.into());
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".config")))?;
    Some(base.join("meshcheck").join("config.toml"))
}

/// A VIS check with its input.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    /// VIS-001: does the asset match this description?
    PromptMatch(String),
    /// VIS-002: texture-artifact scan.
    Artifacts,
    /// VIS-003: a freeform question.
    Question(String),
}

impl Check {
    /// From the API's fields: `check` plus `prompt` or `question`. A missing
    /// or extra text is BAD_REQUEST.
    pub fn parse(id: &str, prompt: Option<&str>, question: Option<&str>) -> Result<Check> {
        let text = |t: Option<&str>, field: &str| -> Result<String> {
            let t = t.map(str::trim).filter(|t| !t.is_empty()).ok_or_else(|| {
                Error::bad_request(format!("{id} needs `{field}`"))
                    .with_detail(json!({"field": field, "reason": "required"}))
            })?;
            if t.chars().count() > MAX_TEXT_CHARS {
                return Err(Error::bad_request(format!("`{field}` is longer than {MAX_TEXT_CHARS} characters"))
                    .with_detail(json!({"field": field, "reason": "too_long"})));
            }
            Ok(t.to_string())
        };
        let unexpected = |field: &str| {
            Error::bad_request(format!("{id} takes no `{field}`"))
                .with_detail(json!({"field": field, "reason": "unexpected"}))
        };
        match id.to_ascii_uppercase().as_str() {
            "VIS-001" => {
                if question.is_some() {
                    return Err(unexpected("question"));
                }
                Ok(Check::PromptMatch(text(prompt, "prompt")?))
            }
            "VIS-002" => match (prompt, question) {
                (Some(_), _) => Err(unexpected("prompt")),
                (_, Some(_)) => Err(unexpected("question")),
                _ => Ok(Check::Artifacts),
            },
            "VIS-003" => {
                if prompt.is_some() {
                    return Err(unexpected("prompt"));
                }
                Ok(Check::Question(text(question, "question")?))
            }
            _ => Err(Error::bad_request(format!("unknown check `{id}`: VIS-001, VIS-002 or VIS-003"))
                .with_detail(json!({"field": "check", "reason": "unknown"}))),
        }
    }

    /// `VIS-001`, `VIS-002` or `VIS-003`.
    pub fn id(&self) -> &'static str {
        match self {
            Check::PromptMatch(_) => "VIS-001",
            Check::Artifacts => "VIS-002",
            Check::Question(_) => "VIS-003",
        }
    }

    /// The prompt or question.
    pub fn text(&self) -> Option<&str> {
        match self {
            Check::PromptMatch(t) | Check::Question(t) => Some(t),
            Check::Artifacts => None,
        }
    }

    /// The answer schema (JSON Schema 2020-12) the reply must fit.
    pub fn schema(&self) -> Value {
        match self {
            Check::PromptMatch(_) => answer_schema::<answers::Vis001>(),
            Check::Artifacts => answer_schema::<answers::Vis002>(),
            Check::Question(_) => answer_schema::<answers::Vis003>(),
        }
    }

    fn task(&self) -> String {
        match self {
            Check::PromptMatch(p) => format!(
                "Does this 3D asset match the following description? Judge shape, parts, proportions, colours and materials; ignore the grey studio background and the lighting.\n\nDescription: {p}\n\nSet `matches` to true only if the asset is clearly what the description says. List what you see in `observations` and every way it departs from the description in `mismatches` (empty when it matches)."
            ),
            Check::Artifacts => "Scan the textures of this 3D asset for artifacts: visible UV seams, stretched or smeared texels, obvious tiling, blurry or low-resolution textures, missing or placeholder textures (checkerboards, flat magenta), baked lighting or shadows that contradict the studio light, normal-map errors, and compression blocks or banding. Report only what is visible in the images; name the view each artifact shows in. Set `clean` to true and `artifacts` to an empty list when you see none.".to_string(),
            Check::Question(q) => format!(
                "Answer this question about the 3D asset in the images, in a few sentences at most, and cite the views that support your answer in `evidence`.\n\nQuestion: {q}"
            ),
        }
    }

    /// Parses and checks a reply's content against the answer type; views
    /// must be among those sent.
    fn check_answer(&self, content: &str, views: &[String]) -> std::result::Result<Value, String> {
        let text = strip_fences(content);
        let known = |v: &str| views.iter().any(|x| x == v);
        let value: Value = serde_json::from_str(text).map_err(|e| format!("the reply is not JSON: {e}"))?;
        match self {
            Check::PromptMatch(_) => {
                let a: answers::Vis001 = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
                if a.matches && !a.mismatches.is_empty() {
                    return Err("`matches` is true but `mismatches` is not empty".into());
                }
            }
            Check::Artifacts => {
                let a: answers::Vis002 = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
                if a.clean != a.artifacts.is_empty() {
                    return Err("`clean` must be true exactly when `artifacts` is empty".into());
                }
                if let Some(bad) = a.artifacts.iter().find(|x| !known(&x.view)) {
                    return Err(format!("artifact view `{}` is not one of the views sent", bad.view));
                }
            }
            Check::Question(_) => {
                let a: answers::Vis003 = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
                if a.answer.trim().is_empty() {
                    return Err("`answer` is empty".into());
                }
                if let Some(bad) = a.evidence.iter().find(|x| !known(&x.view)) {
                    return Err(format!("evidence view `{}` is not one of the views sent", bad.view));
                }
            }
        }
        Ok(value)
    }
}

fn strip_fences(s: &str) -> &str {
    let t = s.trim();
    let t = t.strip_prefix("```json").or_else(|| t.strip_prefix("```")).unwrap_or(t);
    t.strip_suffix("```").unwrap_or(t).trim()
}

/// The JSON Schema of an answer type, with enums as plain `enum` lists (some
/// providers' structured output accepts no `oneOf`) and no `$schema` key.
pub fn answer_schema<T: schemars::JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    simplify(&mut v);
    v
}

/// The schema file as written to `schemas/` (with `$schema`).
pub fn schema_file<T: schemars::JsonSchema>() -> Value {
    let mut v = answer_schema::<T>();
    if let Value::Object(m) = &mut v {
        let mut out = serde_json::Map::new();
        out.insert("$schema".into(), Value::String("https://json-schema.org/draft/2020-12/schema".into()));
        out.extend(std::mem::take(m));
        *m = out;
    }
    v
}

fn simplify(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("$schema");
            let consts: Option<Vec<Value>> = m
                .get("oneOf")
                .and_then(|o| o.as_array())
                .and_then(|alts| alts.iter().map(|a| a.get("const").filter(|c| c.is_string()).cloned()).collect());
            if let Some(values) = consts {
                m.remove("oneOf");
                m.insert("type".into(), Value::String("string".into()));
                m.insert("enum".into(), Value::Array(values));
            }
            m.values_mut().for_each(simplify);
        }
        Value::Array(a) => a.iter_mut().for_each(simplify),
        _ => {}
    }
}

/// One still shown to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shot {
    /// The view's name (`front`, ..., `three_quarter`).
    pub name: String,
    /// The view.
    pub angle: Angle,
    /// Width and height in pixels.
    pub size: u32,
    /// Where the PNG is on disk (CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Signed URL of the PNG (service).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A still and its PNG bytes.
#[derive(Debug, Clone)]
pub struct Still {
    /// How it is described in the envelope.
    pub shot: Shot,
    /// The PNG.
    pub png: Vec<u8>,
}

/// The inspect answer envelope (spec: "Inspect answer envelope").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(title = "InspectAnswer", description = "A vision model's answer about the renders (schema 1.2).")]
pub struct InspectAnswer {
    /// Always "1.2".
    pub schema_version: String,
    /// Identifier on the service (`ins_` + random); null in the CLI.
    pub inspect_id: Option<String>,
    /// Always false: the answer comes from a vision model.
    pub deterministic: bool,
    /// The model version the provider reported in its reply.
    pub model: String,
    /// Version of the prompt wording.
    pub prompt_version: u32,
    /// `VIS-001`, `VIS-002` or `VIS-003`.
    pub check: String,
    /// The prompt (VIS-001) or question (VIS-003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The answer, conforming to the check's schema (schemas/vis-00N.json).
    pub answer: Value,
    /// The renders shown to the model.
    pub screenshots: Vec<Shot>,
}

fn unavailable(message: impl Into<String>, reason: &str) -> Error {
    Error::new(ErrorCode::InspectUnavailable, message).with_detail(json!({ "reason": reason }))
}

/// Asks the model about `stills`. Retries once after an invalid reply or a
/// server error; a timeout, a refused connection or a 4xx is final.
pub fn inspect(config: &Config, check: &Check, stills: &[Still]) -> Result<InspectAnswer> {
    if stills.is_empty() {
        return Err(Error::new(ErrorCode::Internal, "no stills to show the model"));
    }
    let client = reqwest::blocking::Client::builder()
        .timeout(config.timeout)
        .build()
        .map_err(|e| unavailable(format!("cannot start the HTTP client: {e}"), "client"))?;
    let views: Vec<String> = stills.iter().map(|s| s.shot.name.clone()).collect();
    let schema = check.schema();
    let system = format!(
        "You review 3D assets for a quality pipeline. You are shown {} renders of one asset under a neutral studio rig (grey background, three-point lighting), named {}. Reply with one JSON object only, no prose and no code fences, that fits this JSON Schema:\n{}",
        stills.len(),
        views.join(", "),
        serde_json::to_string(&schema).unwrap_or_default()
    );
    let mut content = vec![json!({"type": "text", "text": check.task()})];
    for s in stills {
        let a = s.shot.angle;
        content.push(json!({"type": "text", "text": format!("View `{}` (elevation {} degrees, azimuth {} degrees):", s.shot.name, a.rv, a.rh)}));
        let data = base64::engine::general_purpose::STANDARD.encode(&s.png);
        content.push(json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}));
    }
    let mut messages = vec![json!({"role": "system", "content": system}), json!({"role": "user", "content": content})];
    let endpoint = format!("{}/chat/completions", config.url);
    let mut last_problem = String::new();
    for attempt in 0..2 {
        let mut body = json!({ "model": config.model, "temperature": 0, "messages": messages });
        if config.json_schema {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": { "name": check.id().to_lowercase().replace('-', "_"), "strict": true, "schema": schema }
            });
        }
        let mut req = client.post(&endpoint).json(&body);
        if let Some(key) = &config.api_key {
            req = req.bearer_auth(key);
        }
        let resp = match req.send() {
            Ok(r) => r,
            Err(e) if e.is_timeout() => {
                return Err(unavailable(
                    format!("the vision model did not answer within {} s", config.timeout.as_secs_f64()),
                    "timeout",
                ));
            }
            Err(e) => {
                return Err(unavailable(format!("cannot reach the vision model at {endpoint}: {e}"), "unreachable"));
            }
        };
        let status = resp.status();
        let text = read_limited(resp).map_err(|(timeout, e)| {
            if timeout {
                unavailable(
                    format!("the vision model did not answer within {} s", config.timeout.as_secs_f64()),
                    "timeout",
                )
            } else {
                unavailable(format!("the vision model's reply could not be read: {e}"), "unreadable")
            }
        })?;
        if status.is_server_error() {
            last_problem = format!("the provider answered HTTP {status}");
            continue;
        }
        if !status.is_success() {
            let snippet: String = text.chars().take(300).collect();
            return Err(unavailable(format!("the provider answered HTTP {status}: {snippet}"), "http_error"));
        }
        let reply: Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                last_problem = format!("the provider's reply is not JSON: {e}");
                continue;
            }
        };
        let model = reply.get("model").and_then(|m| m.as_str()).unwrap_or(&config.model).to_string();
        let content = reply.pointer("/choices/0/message/content").map(message_text).unwrap_or_default();
        match check.check_answer(&content, &views) {
            Ok(answer) => {
                return Ok(InspectAnswer {
                    schema_version: crate::report::SCHEMA_VERSION.into(),
                    inspect_id: None,
                    deterministic: false,
                    model,
                    prompt_version: PROMPT_VERSION,
                    check: check.id().into(),
                    question: check.text().map(str::to_string),
                    answer,
                    screenshots: stills.iter().map(|s| s.shot.clone()).collect(),
                });
            }
            Err(why) => {
                last_problem = format!("the answer does not fit the {} schema: {why}", check.id());
                if attempt == 0 {
                    // Show the model its reply and what was wrong with it.
                    messages.push(json!({"role": "assistant", "content": content}));
                    messages.push(json!({"role": "user", "content": format!("That reply is not valid: {why}. Reply again with only the JSON object that fits the schema.")}));
                }
            }
        }
    }
    Err(unavailable(format!("the vision model gave no valid answer in two attempts: {last_problem}"), "invalid_answer"))
}

/// Reads at most [`MAX_REPLY_BYTES`] of the body; `Err(true)` on a timeout.
fn read_limited(resp: reqwest::blocking::Response) -> std::result::Result<String, (bool, String)> {
    use std::io::Read;
    let mut buf = Vec::new();
    resp.take(MAX_REPLY_BYTES).read_to_end(&mut buf).map_err(|e| {
        let timeout = e.kind() == std::io::ErrorKind::TimedOut
            || e.get_ref().and_then(|i| i.downcast_ref::<reqwest::Error>()).is_some_and(|r| r.is_timeout());
        (timeout, e.to_string())
    })?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A message's text: a string, or the text parts of a content array.
fn message_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(parts) => {
            parts.iter().filter_map(|p| p.get("text").and_then(|t| t.as_str())).collect::<Vec<_>>().join("")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_comes_from_env_then_file() {
        let none = |_: &str| None;
        let e = Config::resolve(&none, None).unwrap_err();
        assert_eq!(e.code, ErrorCode::InspectUnavailable);
        assert!(e.help.unwrap().contains("MESHCHECK_VISION_URL"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "[vision]\nurl = \"http://file/v1/\"\nmodel = \"m-file\"\ntimeout_s = 5\n").unwrap();
        let c = Config::resolve(&none, Some(&file)).unwrap();
        assert_eq!((c.url.as_str(), c.model.as_str(), c.timeout.as_secs()), ("http://file/v1", "m-file", 5));
        assert!(c.json_schema && c.api_key.is_none());
        let env = |k: &str| match k {
            "MESHCHECK_VISION_MODEL" => Some("m-env".to_string()),
            "MESHCHECK_VISION_RESPONSE_FORMAT" => Some("off".to_string()),
            "MESHCHECK_VISION_API_KEY" => Some("sk-1".to_string()),
            _ => None,
        };
        let c = Config::resolve(&env, Some(&file)).unwrap();
        assert_eq!((c.model.as_str(), c.api_key.as_deref(), c.json_schema), ("m-env", Some("sk-1"), false));
        let bad = |k: &str| (k == "MESHCHECK_VISION_RESPONSE_FORMAT").then(|| "xml".to_string());
        assert_eq!(Config::resolve(&bad, Some(&file)).unwrap_err().code, ErrorCode::BadRequest);
    }

    #[test]
    fn checks_need_their_text() {
        assert_eq!(Check::parse("VIS-001", Some("a chair"), None).unwrap(), Check::PromptMatch("a chair".into()));
        assert_eq!(Check::parse("vis-002", None, None).unwrap(), Check::Artifacts);
        for (id, p, q) in [
            ("VIS-001", None, None),
            ("VIS-003", None, Some("  ")),
            ("VIS-002", Some("x"), None),
            ("VIS-009", None, None),
        ] {
            assert_eq!(Check::parse(id, p, q).unwrap_err().code, ErrorCode::BadRequest, "{id}");
        }
    }

    #[test]
    fn answers_are_checked() {
        let views = vec!["front".to_string(), "top".to_string()];
        let c = Check::Artifacts;
        assert!(c.check_answer(r#"{"clean": true, "artifacts": []}"#, &views).is_ok());
        assert!(c.check_answer("```json\n{\"clean\": true, \"artifacts\": []}\n```", &views).is_ok());
        assert!(c.check_answer(r#"{"clean": true, "artifacts": [], "extra": 1}"#, &views).is_err());
        assert!(c.check_answer(r#"{"clean": false, "artifacts": []}"#, &views).is_err());
        let bad_view = r#"{"clean": false, "artifacts": [{"kind": "seam", "view": "side", "description": "x", "confidence": "low"}]}"#;
        assert!(c.check_answer(bad_view, &views).is_err());
        let numeric = r#"{"matches": true, "confidence": 0.9, "observations": [], "mismatches": []}"#;
        assert!(Check::PromptMatch("x".into()).check_answer(numeric, &views).is_err(), "confidence is categorical");
        let q =
            r#"{"answer": "Four legs.", "confidence": "high", "evidence": [{"view": "front", "observation": "legs"}]}"#;
        assert!(Check::Question("x".into()).check_answer(q, &views).is_ok());
    }

    #[test]
    fn schemas_use_plain_enums() {
        let s = answer_schema::<answers::Vis002>().to_string();
        assert!(!s.contains("oneOf") && !s.contains("$schema"), "{s}");
        assert!(
            s.contains(r#""enum":["low","medium","high"]"#) || s.contains(r#""enum":["low", "medium", "high"]"#),
            "{s}"
        );
    }
}
