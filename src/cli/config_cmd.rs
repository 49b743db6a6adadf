//! `meshcheck config PATH`: the settings one file gets (from the defaults,
//! meshcheck.toml and its rules, and the flags given) and where each came
//! from, as a table or JSON.

use super::catalog_cmd::ListFormat;
use super::config::{Origin, Resolved, Resolver, SettingFlags, shown};
use super::output::emit;
use crate::error::{Error, Result};
use crate::profile::Profile;
use clap::Args;
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use serde_json::{Map, Value, json};
use std::io::IsTerminal;
use std::path::PathBuf;

/// Arguments of `meshcheck config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The file to resolve the settings of (it need not exist yet; `-` is
    /// standard input, which no rule matches).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<ListFormat>,
    /// The flags `validate` would be given: they win over the file.
    #[command(flatten)]
    pub settings: SettingFlags,
}

/// `meshcheck config`.
pub fn run(args: ConfigArgs) -> Result<i32> {
    if args.path.is_dir() {
        return Err(Error::bad_request(format!(
            "{} is a folder; `meshcheck config` shows the settings of one file (give a file in it; it need not exist)",
            args.path.display()
        )));
    }
    let stdin = args.path.as_os_str() == "-";
    let mut resolver = Resolver::new(&args.settings)?;
    let resolved = resolver.resolve((!stdin).then_some(args.path.as_path()))?;
    // Building the options checks the flags' values as `validate` would.
    let profile = resolver.options(&resolved.engine())?.profile;
    let file = if stdin {
        "-".to_string()
    } else {
        let cwd = std::env::current_dir().unwrap_or_default();
        shown(&cwd, &super::config::absolute(&cwd, &args.path))
    };
    let format =
        args.format.unwrap_or(if std::io::stdout().is_terminal() { ListFormat::Table } else { ListFormat::Json });
    match format {
        ListFormat::Json => {
            let mut text = serde_json::to_string_pretty(&to_json(&file, &resolved, &profile)).expect("JSON");
            text.push('\n');
            emit(&text);
        }
        ListFormat::Table => emit(&table(&file, &resolved, &profile)),
    }
    Ok(0)
}

/// One row per setting (one per override): key, value as text, origin.
fn rows(r: &Resolved, profile: &Profile) -> Vec<(String, String, Origin)> {
    let list = |v: &[String], empty: &str| if v.is_empty() { empty.to_string() } else { v.join(", ") };
    let mut out = vec![(
        "profile".to_string(),
        if profile.name == r.profile.value {
            profile.name.clone()
        } else {
            format!("{} ({})", r.profile.value, profile.name)
        },
        r.profile.from.clone(),
    )];
    for (k, v) in &r.overrides {
        out.push((format!("overrides.{k}"), number(v.value), v.from.clone()));
    }
    out.push(("only".into(), list(&r.only.value, "(every check)"), r.only.from.clone()));
    out.push(("skip".into(), list(&r.skip.value, "(none)"), r.skip.from.clone()));
    out.push(("fail_on".into(), r.fail_on.value.as_str().into(), r.fail_on.from.clone()));
    out.push(("mode".into(), r.mode.value.as_str().into(), r.mode.from.clone()));
    let weld = r.weld_tolerance.value.or_else(|| profile.value("weld_tolerance")).map(number).unwrap_or_default();
    let weld = if r.weld_tolerance.value.is_none() { format!("{weld} (the profile's)") } else { weld };
    out.push(("weld_tolerance".into(), weld, r.weld_tolerance.from.clone()));
    out
}

/// A number as the JSON shows it.
fn number(v: f64) -> String {
    crate::report::num(v).to_string()
}

fn table(file: &str, r: &Resolved, profile: &Profile) -> String {
    let config = match &r.config {
        None => "none".to_string(),
        Some(c) if r.rules.is_empty() => format!("{c} (no rule matches)"),
        Some(c) => {
            let n: Vec<String> = r.rules.iter().map(usize::to_string).collect();
            format!("{c} (rules matching: {})", n.join(", "))
        }
    };
    let mut t = Table::new();
    t.load_style(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    t.set_header(vec!["Setting", "Value", "From"]);
    for (k, v, from) in rows(r, profile) {
        t.add_row(vec![k, v, from.to_string()]);
    }
    format!("File:   {file}\nConfig: {config}\n{t}\n")
}

fn to_json(file: &str, r: &Resolved, profile: &Profile) -> Value {
    let entry = |value: Value, from: &Origin| json!({"value": value, "from": from});
    let overrides: Map<String, Value> =
        r.overrides.iter().map(|(k, v)| (k.clone(), entry(crate::report::num(v.value), &v.from))).collect();
    let weld = r.weld_tolerance.value.or_else(|| profile.value("weld_tolerance")).map(crate::report::num);
    json!({
        "file": file,
        "config": r.config,
        "rules": r.rules,
        "settings": {
            "profile": entry(json!(r.profile.value), &r.profile.from),
            "overrides": overrides,
            "only": entry(json!(r.only.value), &r.only.from),
            "skip": entry(json!(r.skip.value), &r.skip.from),
            "fail_on": entry(json!(r.fail_on.value), &r.fail_on.from),
            "mode": entry(json!(r.mode.value), &r.mode.from),
            "weld_tolerance": entry(json!(weld), &r.weld_tolerance.from),
        },
        "profile": {"name": profile.name, "thresholds": profile.thresholds_json()},
    })
}
