//! `meshcheck checks` and `meshcheck profiles`: the catalog and the budgets
//! on the terminal (or as JSON).

use super::output::emit;
use crate::checks::catalog::{self, CATALOG};
use crate::error::Result;
use crate::profile::{Param, Profile};
use clap::{Args, ValueEnum};
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde_json::{Map, Value, json};
use std::io::IsTerminal;

/// Output formats of `checks` and `profiles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A table.
    Table,
    /// JSON.
    Json,
}

/// Arguments of `meshcheck checks`.
#[derive(Debug, Args)]
pub struct ChecksArgs {
    /// Show thresholds under this profile (a name or a .toml path).
    #[arg(long, default_value = "web", value_name = "NAME|FILE.toml")]
    pub profile: String,
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,
}

/// Arguments of `meshcheck profiles`.
#[derive(Debug, Args)]
pub struct ProfilesArgs {
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,
}

fn format_of(f: Option<ListFormat>) -> ListFormat {
    f.unwrap_or(if std::io::stdout().is_terminal() { ListFormat::Table } else { ListFormat::Json })
}

fn fmt_value(p: &Param, v: f64) -> String {
    if p.integer { crate::checks::thousands(v as u64) } else { crate::checks::short(v) }
}

/// The catalog as JSON under a profile.
pub fn checks_json(profile: &Profile) -> Value {
    Value::Array(
        CATALOG
            .iter()
            .map(|c| {
                let thresholds: Map<String, Value> =
                    c.params.iter().map(|p| (p.key.to_string(), crate::report::num(profile.get(p)))).collect();
                json!({
                    "id": c.id,
                    "name": c.name,
                    "category": c.category,
                    "severity": profile.severity_of(c.id, c.severity).as_str(),
                    "thresholds": thresholds,
                })
            })
            .collect(),
    )
}

/// `meshcheck checks`.
pub fn checks(args: ChecksArgs) -> Result<i32> {
    let profile = catalog::profile(&args.profile)?;
    match format_of(args.format) {
        ListFormat::Json => emit(&format!("{}\n", serde_json::to_string_pretty(&checks_json(&profile)).expect("JSON"))),
        ListFormat::Table => {
            let mut t = Table::new();
            t.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
            t.set_header(vec!["ID", "Name", "Category", "Severity", &format!("Thresholds ({})", profile.name)]);
            for c in CATALOG.iter() {
                let th: Vec<String> =
                    c.params.iter().map(|p| format!("{} = {}", p.key, fmt_value(p, profile.get(p)))).collect();
                t.add_row(vec![
                    c.id,
                    c.name,
                    c.category,
                    profile.severity_of(c.id, c.severity).as_str(),
                    &th.join("\n"),
                ]);
            }
            emit(&format!("{t}\n"));
        }
    }
    Ok(0)
}

/// `meshcheck profiles`.
pub fn profiles(args: ProfilesArgs) -> Result<i32> {
    let profiles: Vec<Profile> = catalog::builtin_profiles();
    match format_of(args.format) {
        ListFormat::Json => {
            let v: Map<String, Value> = profiles
                .iter()
                .map(|p| (p.name.clone(), json!({"description": p.description, "thresholds": p.thresholds_json()})))
                .collect();
            emit(&format!("{}\n", serde_json::to_string_pretty(&v).expect("JSON")));
        }
        ListFormat::Table => {
            let mut t = Table::new();
            t.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
            let mut header = vec!["Parameter".to_string(), "Unit".to_string()];
            header.extend(
                profiles.iter().map(|p| if p.name == "web" { "web (default)".to_string() } else { p.name.clone() }),
            );
            header.push("Override".into());
            t.set_header(header);
            for (p, _) in profiles[0].values() {
                let mut row = vec![p.key.to_string(), p.unit.to_string()];
                row.extend(profiles.iter().map(|pr| fmt_value(p, pr.get(p))));
                row.push(if p.overridable { "yes".into() } else { "no".into() });
                t.add_row(row);
            }
            emit(&format!("{t}\n"));
        }
    }
    Ok(0)
}
