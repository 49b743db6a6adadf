//! SPEC: external references and file size. (SPEC-001, the reference
//! validator, arrives with the validator bridge.)

use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, bytes_h, measured, over};
use serde_json::{Value, json};

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

/// SPEC-004.
pub fn file_size(cx: &Ctx<'_>) -> CheckOutput {
    let bytes = cx.asset.asset_bytes;
    let max = cx.profile.get("max_file_bytes");
    let verdict = if bytes as f64 > max { "over" } else { "within" };
    measured(
        Obj::new().int("bytes", bytes).int("input_bytes", cx.asset.info.bytes),
        Obj::new().param(cx.profile, "max_file_bytes"),
        over(bytes as f64, max),
        format!(
            "{} as delivered, {verdict} the budget of {} ({})",
            bytes_h(bytes),
            bytes_h(max as u64),
            cx.profile.name
        ),
    )
}

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
