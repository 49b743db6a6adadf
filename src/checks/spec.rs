//! SPEC: external references and file size. (SPEC-001, the reference
//! validator, arrives with the validator bridge.)

use super::{CheckDef, Family, Needs};
use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, bytes_h, measured, over};
use crate::profile::Param;
use crate::report::Severity;
use serde_json::{Value, json};

const CATEGORY: &str = "spec";

/// The SPEC family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "SPEC",
    category: CATEGORY,
    label: "Spec conformance",
    blurb: "Follows the glTF 2.0 spec, loads completely, fits the file budget",
    checks: &[VALIDATOR, REFERENCES, FILE_SIZE],
};

/// SPEC-003: its definition.
pub const REFERENCES: CheckDef = CheckDef {
    id: "SPEC-003",
    name: "External references resolvable",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[],
    what: "Resolves every buffer and image URI: data: URIs must decode, relative paths must exist beside the .gltf (or in the zip bundle, without leaving it); remote (http:, https:) and absolute URIs are never fetched and count as unresolved.",
    why: "A viewer that cannot load a texture shows the asset untextured or not at all; a bundle must be complete to be portable.",
    fix: "Put the named files next to the .gltf (or into the zip at the paths the URIs give), fix misspelt names, or pack the asset as a GLB.",
    measured: &[
        ("references", "URIs in buffers and images"),
        ("external", "of those, external files (not data: URIs)"),
        ("resolved", "URIs that resolved"),
        ("unresolved", "URIs that did not"),
        ("missing", "per unresolved URI (at most 100): pointer, uri, reason"),
    ],
    threshold: &[("max_unresolved", "always 0")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: None,
    run: references,
};

/// SPEC-003.
pub fn references(cx: &Ctx<'_>) -> CheckOutput {
    let refs = &cx.asset.references;
    let unresolved: Vec<_> = refs.iter().filter(|r| r.bytes.is_none()).collect();
    let missing: Vec<Value> = unresolved
        .iter()
        .take(MAX_LOCATIONS)
        .map(|r| json!({"pointer": r.pointer, "uri": r.uri, "reason": r.reason.clone().unwrap_or_default()}))
        .collect();
    let outcome = if unresolved.is_empty() { Comparison::Within } else { Comparison::Breach };
    let message = match unresolved.first() {
        None if refs.is_empty() => "no external references".to_string(),
        None if refs.len() == 1 => "the one reference resolves".to_string(),
        None => format!("all {} references resolve", refs.len()),
        Some(first) => format!(
            "{} of {} references do not resolve; first: {} ({}: {})",
            unresolved.len(),
            refs.len(),
            first.uri,
            first.pointer,
            first.reason.clone().unwrap_or_default()
        ),
    };
    measured(
        Obj::new()
            .int("references", refs.len() as u64)
            .int("external", refs.iter().filter(|r| r.external).count() as u64)
            .int("resolved", (refs.len() - unresolved.len()) as u64)
            .int("unresolved", unresolved.len() as u64)
            .val("missing", Value::Array(missing)),
        Obj::new().int("max_unresolved", 0),
        outcome,
        message,
    )
}

/// Budget: Asset size as delivered.
pub const MAX_FILE_BYTES: Param =
    Param { key: "max_file_bytes", unit: "bytes", doc: "Asset size as delivered", overridable: true, integer: true };

/// SPEC-004: its definition.
pub const FILE_SIZE: CheckDef = CheckDef {
    id: "SPEC-004",
    name: "File size vs budget",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_FILE_BYTES],
    what: "Measures the asset as a viewer downloads it: the GLB, or the .gltf plus every external file it references that resolved (a zip bundle counts its members uncompressed, not the zip).",
    why: "Download size is load time on the web and in AR quick-look viewers; platforms cap it.",
    fix: "Compress geometry (Draco or meshopt), compress textures (KTX2, WebP, smaller JPEGs), and remove unused data (gltf-transform prune).",
    measured: &[
        ("bytes", "asset size as delivered, in bytes"),
        ("input_bytes", "size of the input as given (the zip itself for a bundle)"),
    ],
    threshold: &[("max_file_bytes", "budget in bytes")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: Some(("bytes", "max_file_bytes")),
    run: file_size,
};

/// SPEC-004.
pub fn file_size(cx: &Ctx<'_>) -> CheckOutput {
    let bytes = cx.asset.asset_bytes;
    let max = cx.profile.get(&MAX_FILE_BYTES);
    let verdict = if bytes as f64 > max { "over" } else { "within" };
    measured(
        Obj::new().int("bytes", bytes).int("input_bytes", cx.asset.info.bytes),
        Obj::new().param(cx.profile, &MAX_FILE_BYTES),
        over(bytes as f64, max),
        format!(
            "{} as delivered, {verdict} the budget of {} ({})",
            bytes_h(bytes),
            bytes_h(max as u64),
            cx.profile.name
        ),
    )
}

/// SPEC-001: its definition.
pub const VALIDATOR: CheckDef = CheckDef {
    id: "SPEC-001",
    name: "glTF spec conformance",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[],
    what: "Runs the Khronos glTF-Validator (npm gltf-validator, pinned) on the file with its external resources and copies its errors and warnings verbatim; infos and hints are counted, not listed. It runs beside meshcheck's own checks. The validator does not decode Draco, meshopt or KTX2/Basis data: those extensions are listed in not_covered, and meshcheck's loader is what checks that such data decodes (a primitive whose stream does not decode is left out of the measurements and named in the report's notes).",
    why: "A file the reference validator rejects may load in one viewer and break in the next; conformance is the floor every pipeline check stands on.",
    fix: "Read the messages' codes and pointers (ISSUES.md of the glTF-Validator explains each code); most are fixed by re-exporting with a current exporter or running the file through glTF-Transform.",
    measured: &[
        ("errors", "validator errors (exact total)"),
        ("warnings", "validator warnings (exact total)"),
        ("infos", "validator infos (exact total)"),
        ("hints", "validator hints (exact total)"),
        ("truncated", "whether messages were cut at 1,000"),
        ("messages", "errors and warnings verbatim: code, message, severity (error or warning), pointer or offset"),
        ("by_code", "count of messages per code, every severity"),
        ("not_covered", "extensions the document uses whose data the validator did not check"),
    ],
    threshold: &[("max_errors", "always 0: any error fails"), ("max_warnings", "always 0: warnings alone warn")],
    needs: Needs { geometry: false, textures: false, validator: true, renderer: false },
    gauge: None,
    run: validator,
};

/// SPEC-001: the Khronos glTF-Validator's errors and warnings, verbatim.
pub fn validator(cx: &Ctx<'_>) -> CheckOutput {
    let outcome = match cx.spec {
        None => return CheckOutput::Skipped("the validator did not run".into()),
        Some(Err(failure)) => return CheckOutput::Skipped(failure.reason()),
        Some(Ok(o)) => o,
    };
    let outcome_kind = if outcome.errors > 0 {
        Comparison::Breach
    } else if outcome.warnings > 0 {
        Comparison::WarnBand
    } else {
        Comparison::Within
    };
    let first_error = outcome.messages.iter().find(|m| m.get("severity").and_then(Value::as_str) == Some("error"));
    let first = first_error.or(outcome.messages.first()).map(|m| {
        let code = m.get("code").and_then(Value::as_str).unwrap_or_default();
        let text = m.get("message").and_then(Value::as_str).unwrap_or_default();
        format!("; first: {code}: {text}")
    });
    let message = format!(
        "glTF-Validator {}: {}, {}, {}, {}{}",
        outcome.validator_version,
        super::count(outcome.errors, "error", "errors"),
        super::count(outcome.warnings, "warning", "warnings"),
        super::count(outcome.infos, "info", "infos"),
        super::count(outcome.hints, "hint", "hints"),
        first.unwrap_or_default()
    );
    measured(
        Obj::new()
            .int("errors", outcome.errors)
            .int("warnings", outcome.warnings)
            .int("infos", outcome.infos)
            .int("hints", outcome.hints)
            .bool("truncated", outcome.truncated)
            .val("messages", Value::Array(outcome.messages.iter().cloned().map(Value::Object).collect()))
            .val("by_code", Value::Object(outcome.by_code.clone()))
            .val("not_covered", Value::Array(outcome.not_covered.iter().cloned().map(Value::String).collect())),
        Obj::new().int("max_errors", 0).int("max_warnings", 0),
        outcome_kind,
        message,
    )
}
