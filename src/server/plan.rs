//! The plans of the specification's Limits table.

use serde::Serialize;

/// A plan's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Plan {
    /// free, indie, studio or scale.
    pub name: &'static str,
    /// Credits granted at the start of each monthly period (no rollover).
    pub monthly_credits: i64,
    /// Requests per minute per key (token bucket capacity and refill).
    pub rate_per_min: i64,
    /// Largest input accepted, in bytes (never above 250 MB).
    pub max_file_bytes: u64,
}

/// The four plans.
pub const PLANS: [Plan; 4] = [
    Plan { name: "free", monthly_credits: 300, rate_per_min: 10, max_file_bytes: 25_000_000 },
    Plan { name: "indie", monthly_credits: 3_000, rate_per_min: 30, max_file_bytes: 100_000_000 },
    Plan { name: "studio", monthly_credits: 10_000, rate_per_min: 60, max_file_bytes: 250_000_000 },
    Plan { name: "scale", monthly_credits: 40_000, rate_per_min: 120, max_file_bytes: 250_000_000 },
];

/// A plan by name.
pub fn plan(name: &str) -> Option<Plan> {
    PLANS.iter().copied().find(|p| p.name == name)
}

/// The names, for messages and `--plan`.
pub fn names() -> Vec<&'static str> {
    PLANS.iter().map(|p| p.name).collect()
}
