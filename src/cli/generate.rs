//! Generated files: shell completions, man pages, JSON Schemas,
//! docs/checks.md and the README's check table. They are committed; a test regenerates them in memory and
//! fails when a committed copy differs (`meshcheck generate` rewrites them).

use super::args::Cli;
use crate::checks::CheckDef;
use crate::checks::catalog::{self, CATALOG, FAMILIES};
use crate::error::{Error, ErrorCode, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// Every generated file: path relative to the repository root, and
/// contents. The README under `root` is hand-written around its generated
/// check table: it is included, spliced, when it is there.
pub fn files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for (shell, name) in [
        (Shell::Bash, "meshcheck.bash"),
        (Shell::Zsh, "_meshcheck"),
        (Shell::Fish, "meshcheck.fish"),
        (Shell::PowerShell, "_meshcheck.ps1"),
        (Shell::Elvish, "meshcheck.elv"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "meshcheck", &mut buf);
        out.push((PathBuf::from("completions").join(name), buf));
    }
    let cmd = Cli::command();
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut buf).expect("man page renders");
    out.push((PathBuf::from("man/meshcheck.1"), buf));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("meshcheck-{}", sub.get_name());
        let static_name: &'static str = Box::leak(name.clone().into_boxed_str());
        let sub = sub.clone().name(static_name).version(env!("CARGO_PKG_VERSION"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(sub).render(&mut buf).expect("man page renders");
        out.push((PathBuf::from(format!("man/{name}.1")), buf));
    }
    let schema = |s: schemars::Schema| {
        let mut v = serde_json::to_value(&s).expect("schema serialises");
        with_catalog_enums(&mut v);
        let mut text = serde_json::to_string_pretty(&v).expect("schema serialises");
        text.push('\n');
        text.into_bytes()
    };
    out.push((PathBuf::from("schemas/report.json"), schema(schemars::schema_for!(crate::report::Report))));
    out.push((PathBuf::from("schemas/check_result.json"), schema(schemars::schema_for!(crate::report::CheckResult))));
    out.push((PathBuf::from("schemas/render_report.json"), schema(schemars::schema_for!(crate::report::RenderReport))));
    out.push((PathBuf::from("schemas/meshcheck-toml.json"), schema(schemars::schema_for!(super::config::ConfigFile))));
    #[cfg(feature = "vision")]
    out.push((
        PathBuf::from("schemas/inspect_answer.json"),
        schema(schemars::schema_for!(crate::vision::InspectAnswer)),
    ));
    #[cfg(feature = "vision")]
    for (name, v) in [
        ("vis-001.json", crate::vision::schema_file::<crate::vision::answers::Vis001>()),
        ("vis-002.json", crate::vision::schema_file::<crate::vision::answers::Vis002>()),
        ("vis-003.json", crate::vision::schema_file::<crate::vision::answers::Vis003>()),
    ] {
        out.push((
            PathBuf::from("schemas").join(name),
            (serde_json::to_string_pretty(&v).unwrap_or_default() + "\n").into_bytes(),
        ));
    }
    out.push((PathBuf::from("docs/checks.md"), checks_md().into_bytes()));
    if let Some(readme) = std::fs::read_to_string(root.join("README.md")).ok().and_then(|t| splice_readme(&t)) {
        out.push((PathBuf::from("README.md"), readme.into_bytes()));
    }
    out
}

/// docs/checks.md, from the check definitions and the profiles.
pub fn checks_md() -> String {
    let mut s = String::from(
        "# Checks\n\n<!-- Generated from the check definitions (src/checks/<family>.rs) by `meshcheck generate`; do not edit. -->\n\n",
    );
    s.push_str("Every report lists these checks in this order (sorted by ID). Consumers act on `status` and the structured `measured`/`threshold` values, never on `message`. ");
    s.push_str("A check that has nothing to measure reports `skipped` with `measured.reason`; so does a check left out with `--only`/`--skip` (reason \"not selected\").\n\n");
    s.push_str("Status: an `error` check that breaches its threshold fails (and fails the report); a `warning` check warns; `info` checks only measure. ");
    s.push_str("Counts over the scene count what is drawn from the default scene (or scene 0): a mesh used by several nodes counts once per node, and every EXT_mesh_gpu_instancing instance counts.\n\n");
    s.push_str("| ID | Name | Category | Severity | Profile parameters | Reads |\n|---|---|---|---|---|---|\n");
    for c in CATALOG.iter() {
        let params: Vec<&str> = c.params.iter().map(|p| p.key).collect();
        s.push_str(&format!(
            "| [{}](#{}) | {} | {} | {} | {} | {} |\n",
            c.id,
            c.id.to_lowercase(),
            c.name,
            c.category,
            c.severity.as_str(),
            params.join(", "),
            reads(c)
        ));
    }
    let profiles = catalog::builtin_profiles();
    for family in FAMILIES.iter().filter(|f| !f.checks.is_empty()) {
        s.push_str(&format!("\n## {}: {}\n", family.prefix, family.category));
        for c in family.checks {
            s.push_str(&format!(
                "\n### {}\n\n**{}** · category `{}` · severity `{}`\n\n",
                c.id,
                c.name,
                c.category,
                c.severity.as_str()
            ));
            s.push_str(&format!(
                "**What it measures.** {}\n\n**Why it matters.** {}\n\n**How to fix.** {}\n\n",
                c.what, c.why, c.fix
            ));
            s.push_str("| `measured` key | meaning |\n|---|---|\n");
            for (k, v) in c.measured {
                s.push_str(&format!("| `{k}` | {v} |\n"));
            }
            s.push_str("\n| `threshold` key | meaning |");
            for p in &profiles {
                s.push_str(&format!(" {} |", p.name));
            }
            s.push_str("\n|---|---|");
            for _ in &profiles {
                s.push_str("---|");
            }
            s.push('\n');
            for (k, v) in c.threshold {
                s.push_str(&format!("| `{k}` | {v} |"));
                for p in &profiles {
                    let val = p.value(k).map_or_else(|| "0".into(), crate::checks::short);
                    s.push_str(&format!(" {val} |"));
                }
                s.push('\n');
            }
        }
    }
    s.push_str("\n## Budget parameters\n\nEach parameter is declared beside the check that reads it; the built-in profiles (`profiles/*.toml`) give its values and are checked against these declarations when they load. Reports echo them in `profile.thresholds` in this order. `overrides` (`--override`, the API's `overrides`) may set only those marked so.\n\n");
    s.push_str("| parameter | unit | meaning | read by | override |");
    for p in &profiles {
        s.push_str(&format!(" {} |", p.name));
    }
    s.push_str("\n|---|---|---|---|---|");
    for _ in &profiles {
        s.push_str("---|");
    }
    s.push('\n');
    for (param, _) in profiles[0].values() {
        let by: Vec<&str> =
            CATALOG.iter().filter(|c| c.params.iter().any(|p| p.key == param.key)).map(|c| c.id).collect();
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |",
            param.key,
            param.unit,
            param.doc,
            by.join(", "),
            if param.overridable { "yes" } else { "no" }
        ));
        for p in &profiles {
            s.push_str(&format!(" {} |", crate::checks::short(p.get(param))));
        }
        s.push('\n');
    }
    s.push_str(include_str!("checks_notes.md"));
    s
}

/// Gives every check result's `id` and `category` in a schema the catalog's
/// values as an `enum` (a check result is an object whose properties
/// include `id`, `category`, `severity` and `status`).
fn with_catalog_enums(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties")
                && ["id", "category", "severity", "status"].iter().all(|k| props.contains_key(*k))
            {
                let ids: Vec<Value> = CATALOG.iter().map(|c| Value::from(c.id)).collect();
                let cats: Vec<Value> = FAMILIES.iter().map(|f| Value::from(f.category)).collect();
                for (key, values) in [("id", ids), ("category", cats)] {
                    if let Some(Value::Object(prop)) = props.get_mut(key) {
                        prop.insert("enum".into(), Value::Array(values));
                    }
                }
            }
            map.values_mut().for_each(with_catalog_enums);
        }
        Value::Array(items) => items.iter_mut().for_each(with_catalog_enums),
        _ => {}
    }
}

/// What a check reads besides the document, in words.
fn reads(c: &CheckDef) -> String {
    let n = c.needs;
    let parts: Vec<&str> = [
        (n.geometry, "geometry"),
        (n.textures, "textures"),
        (n.validator, "glTF-Validator"),
        (n.renderer, "renderer (full mode)"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, w)| *w)
    .collect();
    if parts.is_empty() { "document".into() } else { parts.join(", ") }
}

/// The README's check table (between its `checks:begin`/`checks:end` markers).
pub fn readme_table() -> String {
    let mut s = String::from("| ID | Check | Category | Severity |\n|---|---|---|---|\n");
    for c in CATALOG.iter() {
        s.push_str(&format!(
            "| [{}](docs/checks.md#{}) | {} | {} | {} |\n",
            c.id,
            c.id.to_lowercase(),
            c.name,
            c.category,
            c.severity.as_str()
        ));
    }
    s
}

const README_BEGIN: &str = "<!-- checks:begin (generated from the check definitions by `meshcheck generate`) -->\n";
const README_END: &str = "<!-- checks:end -->";

/// `readme` with the text between its check-table markers replaced by the
/// current table; `None` when the markers are missing.
pub fn splice_readme(readme: &str) -> Option<String> {
    let start = readme.find(README_BEGIN)? + README_BEGIN.len();
    let end = start + readme[start..].find(README_END)?;
    Some(format!("{}{}{}", &readme[..start], readme_table(), &readme[end..]))
}

/// Writes every generated file under `root`.
pub fn write_all(root: &Path) -> Result<()> {
    for (rel, bytes) in files(root) {
        let path = root.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::new(ErrorCode::Internal, format!("cannot create {}: {e}", parent.display())))?;
        }
        std::fs::write(&path, bytes)
            .map_err(|e| Error::new(ErrorCode::Internal, format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}
