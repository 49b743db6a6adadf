//! `--format sarif`: SARIF 2.1.0 (OASIS), as GitHub code scanning and other
//! SARIF viewers read it.
//!
//! One run whose driver lists a rule per catalog check (name, description,
//! help from what/why/fix, default level from severity) and a rule per
//! error code a file can end with; one result per finding (a non-passing
//! check, a SPEC-001 validator message with its JSON pointer as a logical
//! location, a file that could not be validated), its `level` from the
//! finding, its artifact URI relative to the working directory, and
//! `partialFingerprints` from the finding's fingerprint. With a baseline,
//! every result carries `baselineState` (`new` or `unchanged`) and accepted
//! ones an accepted external suppression. Nothing in it depends on time or
//! scheduling: the same input gives the same bytes.

use super::findings::{BaselineState, Finding, Run, Subject};
use crate::checks::catalog::CATALOG;
use crate::report::Severity;
use serde_json::{Map, Value, json};

/// Where the SARIF 2.1.0 schema is published.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The key of the fingerprint in `partialFingerprints`.
pub const FINGERPRINT_KEY: &str = "meshcheckFinding/v1";

/// How many JSON pointers of a check's `measured.locations` a result lists
/// as logical locations.
const MAX_LOGICAL_LOCATIONS: usize = 20;

/// The error codes a file of a `validate` run can end with, as rules of
/// their own: code, name, short description, help.
const ERROR_RULES: &[(&str, &str, &str, &str)] = &[
    (
        "BAD_REQUEST",
        "CannotRead",
        "The file could not be read",
        "The path could not be opened or read. Check that it exists and is readable.",
    ),
    (
        "BUNDLE_INCOMPLETE",
        "BundleIncomplete",
        "The bundle is incomplete",
        "A zip bundle holds no .gltf or .glb, or buffers it names are missing. Add the missing files to the bundle.",
    ),
    (
        "FILE_TOO_LARGE",
        "FileTooLarge",
        "The file is too large",
        "The input is larger than meshcheck reads. Reduce it, or split the scene.",
    ),
    (
        "INTERNAL",
        "MeshcheckFault",
        "meshcheck failed",
        "A fault of meshcheck, not of the asset. Please report it with the file.",
    ),
    (
        "MALFORMED_GLTF",
        "MalformedGltf",
        "The file is not a readable glTF document",
        "The GLB container, the JSON or the data cannot be read as glTF 2.0. Re-export the asset, or run the Khronos glTF-Validator for the details.",
    ),
    (
        "RENDER_FAILED",
        "RendererFailed",
        "The renderer failed",
        "The renderer is unavailable or could not draw the asset (full mode).",
    ),
    (
        "UNSUPPORTED_FORMAT",
        "UnsupportedFormat",
        "The file is not glTF 2.0",
        "Not a GLB, a .gltf or a zip bundle, or a glTF version other than 2.0. meshcheck reads .glb, .gltf (with its resources) and .zip bundles.",
    ),
];

fn level_of(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// `Some Name` as `SomeName` (SARIF's `name` is an identifier).
fn pascal(text: &str) -> String {
    let mut out = String::new();
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| !w.is_empty()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    out
}

/// A path as a URI reference: relative paths stay relative, absolute ones
/// become `file:` URIs; every byte outside RFC 3986's unreserved set (and
/// `/`) is percent-encoded.
pub fn uri(path: &str) -> String {
    fn encode(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
    let bytes = path.as_bytes();
    if path.starts_with('/') {
        format!("file://{}", encode(path))
    } else if bytes.len() >= 3 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' && bytes[2] == b'/' {
        // A Windows drive: file:///C:/...
        format!("file:///{}:{}", bytes[0] as char, encode(&path[2..]))
    } else {
        encode(path)
    }
}

fn rules() -> (Vec<Value>, Vec<String>) {
    let mut rules = Vec::new();
    let mut ids = Vec::new();
    for c in CATALOG.iter() {
        rules.push(json!({
            "id": c.id,
            "name": pascal(c.name),
            "shortDescription": {"text": c.name},
            "fullDescription": {"text": c.what},
            "help": {
                "text": format!("{}\n\nWhy: {}\n\nFix: {}", c.what, c.why, c.fix),
                "markdown": format!("{}\n\n**Why:** {}\n\n**Fix:** {}", c.what, c.why, c.fix),
            },
            "defaultConfiguration": {"level": level_of(c.severity)},
            "properties": {"category": c.category, "tags": [c.category]},
        }));
        ids.push(c.id.to_string());
    }
    for (code, name, short, help) in ERROR_RULES {
        rules.push(json!({
            "id": code,
            "name": name,
            "shortDescription": {"text": short},
            "fullDescription": {"text": help},
            "help": {"text": help},
            "defaultConfiguration": {"level": "error"},
            "properties": {"category": "input", "tags": ["input"]},
        }));
        ids.push(code.to_string());
    }
    (rules, ids)
}

/// The check's measured values for a result's properties, without what
/// other results carry (the validator's messages).
fn measured_props(m: &Map<String, Value>) -> Value {
    Value::Object(m.iter().filter(|(k, _)| k.as_str() != "messages").map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn result(run: &Run<'_>, f: &Finding, rule_index: usize, artifact: Option<usize>) -> Value {
    let mut r = Map::new();
    r.insert("ruleId".into(), json!(f.rule));
    r.insert("ruleIndex".into(), json!(rule_index));
    r.insert("level".into(), json!(f.level.as_str()));
    r.insert("message".into(), json!({"text": f.message}));
    let mut location = Map::new();
    if let Some(index) = artifact {
        location.insert(
            "physicalLocation".into(),
            json!({"artifactLocation": {"uri": uri(&f.path), "index": index}, "region": {"startLine": 1}}),
        );
    }
    let mut props = Map::new();
    let check = run.outcomes[f.file].result.as_ref().ok().and_then(|r| r.checks.iter().find(|c| c.id == f.rule));
    match &f.subject {
        Subject::ValidatorMessage { code, pointer } => {
            if !pointer.is_empty() {
                location.insert(
                    "logicalLocations".into(),
                    json!([{"fullyQualifiedName": pointer, "kind": "element", "decoratedName": format!("{code} at {pointer}")}]),
                );
            }
            props.insert("code".into(), json!(code));
            props.insert("pointer".into(), json!(pointer));
        }
        Subject::Check { status } => {
            props.insert("status".into(), json!(status.as_str()));
            if let Some(c) = check {
                let pointers: Vec<&str> = c
                    .measured
                    .get("locations")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).take(MAX_LOGICAL_LOCATIONS).collect())
                    .unwrap_or_default();
                if !pointers.is_empty() {
                    let logical: Vec<Value> =
                        pointers.iter().map(|p| json!({"fullyQualifiedName": p, "kind": "element"})).collect();
                    location.insert("logicalLocations".into(), Value::Array(logical));
                }
                props.insert("severity".into(), json!(c.severity.as_str()));
                props.insert("measured".into(), measured_props(&c.measured));
                props.insert("threshold".into(), Value::Object(c.threshold.clone()));
            }
        }
        Subject::Unreadable { code } => {
            props.insert("code".into(), json!(code));
        }
    }
    if !location.is_empty() {
        r.insert("locations".into(), json!([Value::Object(location)]));
    }
    r.insert("partialFingerprints".into(), json!({FINGERPRINT_KEY: f.fingerprint}));
    match f.baseline {
        BaselineState::NotCompared => {}
        BaselineState::New => {
            r.insert("baselineState".into(), json!("new"));
        }
        BaselineState::Accepted => {
            r.insert("baselineState".into(), json!("unchanged"));
            let why = format!("accepted in the baseline {}", run.baseline.as_deref().unwrap_or("file"));
            r.insert("suppressions".into(), json!([{"kind": "external", "status": "accepted", "justification": why}]));
        }
    }
    r.insert("properties".into(), Value::Object(props));
    Value::Object(r)
}

/// The SARIF log of a run, pretty-printed with a trailing newline.
pub fn sarif(run: &Run<'_>) -> String {
    let (mut rules, mut ids) = rules();
    // An error code outside the table still gets a rule, so every result's
    // ruleIndex points at its rule.
    let mut extra: Vec<&str> = run
        .findings
        .iter()
        .filter(|f| matches!(f.subject, Subject::Unreadable { .. }) && !ids.contains(&f.rule))
        .map(|f| f.rule.as_str())
        .collect();
    extra.sort_unstable();
    extra.dedup();
    for code in extra {
        rules.push(json!({
            "id": code,
            "name": format!("Error{}", pascal(&code.to_ascii_lowercase())),
            "shortDescription": {"text": "The file could not be validated"},
            "defaultConfiguration": {"level": "error"},
        }));
        ids.push(code.to_string());
    }

    // One artifact per file on disk, in path order.
    let mut order: Vec<usize> = (0..run.outcomes.len()).collect();
    order.sort_by(|a, b| run.paths[*a].cmp(&run.paths[*b]).then(a.cmp(b)));
    let mut artifact_of = vec![None; run.outcomes.len()];
    let mut artifacts = Vec::new();
    for &i in &order {
        if run.outcomes[i].job.path.is_none() {
            continue;
        }
        let mut a = Map::new();
        a.insert("location".into(), json!({"uri": uri(&run.paths[i])}));
        if let Ok(r) = &run.outcomes[i].result {
            a.insert("length".into(), json!(r.input.bytes));
            a.insert("hashes".into(), json!({"sha-256": r.input.sha256}));
            a.insert("properties".into(), json!({"verdict": r.verdict.as_str(), "profile": r.profile.name}));
        }
        artifact_of[i] = Some(artifacts.len());
        artifacts.push(Value::Object(a));
    }

    // Results in path order, then the findings' own order.
    let mut findings: Vec<&Finding> = run.findings.iter().collect();
    findings.sort_by(|a, b| a.path.cmp(&b.path).then(a.file.cmp(&b.file)));
    let results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let index = ids.iter().position(|id| *id == f.rule).expect("every finding's rule is listed");
            result(run, f, index, artifact_of[f.file])
        })
        .collect();

    let version = env!("CARGO_PKG_VERSION");
    let log = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "meshcheck",
                "fullName": format!("meshcheck {version}"),
                "version": version,
                "semanticVersion": version,
                "rules": rules,
            }},
            "artifacts": artifacts,
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).expect("SARIF serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_percent_encoded_references() {
        assert_eq!(uri("assets/a b.glb"), "assets/a%20b.glb");
        assert_eq!(uri("assets/100%#1?.glb"), "assets/100%25%231%3F.glb");
        assert_eq!(uri("/elsewhere/d.glb"), "file:///elsewhere/d.glb");
        assert_eq!(uri("C:/x/y.glb"), "file:///C:/x/y.glb");
        assert_eq!(uri("é.glb"), "%C3%A9.glb");
        // A colon in a first segment would read as a scheme.
        assert_eq!(uri("a:b.glb"), "a%3Ab.glb");
    }

    #[test]
    fn rule_names_are_identifiers() {
        assert_eq!(pascal("Non-manifold edges"), "NonManifoldEdges");
        assert_eq!(pascal("malformed_gltf"), "MalformedGltf");
    }
}
