//! Value parsers shared by several subcommands' arguments.

/// A number of seconds, above 0 and at most a day.
pub fn positive_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 86_400.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds between 0 and 86400")),
    }
}

/// A turntable request as JSON, e.g. `{"frames":36,"format":"gif","size":512}`
/// (its limits, such as the format, are checked later as BAD_REQUEST).
pub fn turntable_spec(s: &str) -> std::result::Result<crate::report::TurntableSpec, String> {
    serde_json::from_str(s)
        .map_err(|e| format!("expected a JSON object such as {{\"frames\":36,\"format\":\"gif\",\"size\":512}}: {e}"))
}

/// [`turntable_spec`], boxed (keeps `validate`'s arguments small).
pub fn turntable_spec_boxed(s: &str) -> std::result::Result<Box<crate::report::TurntableSpec>, String> {
    turntable_spec(s).map(Box::new)
}
