//! Value parsers shared by several subcommands' arguments.

/// A number of seconds, above 0 and at most a day.
pub fn positive_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 86_400.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds between 0 and 86400")),
    }
}
