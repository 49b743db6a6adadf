//! SPEC: external references and file size. (SPEC-001, the reference
//! validator, arrives with the validator bridge.)

use super::{CheckOutput, Ctx, MAX_LOCATIONS, Obj, Outcome, bytes_h, measured, over};
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
    let outcome = if unresolved.is_empty() { Outcome::Within } else { Outcome::Breach };
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
