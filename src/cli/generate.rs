//! Generated files: shell completions, man pages, JSON Schemas and
//! docs/checks.md. They are committed; a test regenerates them in memory and
//! fails when a committed copy differs (`meshcheck generate` rewrites them).

use super::args::Cli;
use crate::checks::catalog::{CATALOG, FAMILIES};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::{BUILTIN_NAMES, PARAMS, Profile};
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

/// Every generated file: path relative to the repository root, and contents.
pub fn files() -> Vec<(PathBuf, Vec<u8>)> {
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
        let mut text = serde_json::to_string_pretty(&s).expect("schema serialises");
        text.push('\n');
        text.into_bytes()
    };
    out.push((PathBuf::from("schemas/report.json"), schema(schemars::schema_for!(crate::report::Report))));
    out.push((PathBuf::from("schemas/check_result.json"), schema(schemars::schema_for!(crate::report::CheckResult))));
    out.push((PathBuf::from("schemas/render_report.json"), schema(schemars::schema_for!(crate::report::RenderReport))));
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
    out
}

/// docs/checks.md, from the catalog and the profiles.
pub fn checks_md() -> String {
    let mut s = String::from(
        "# Checks\n\n<!-- Generated from src/checks/catalog.rs by `meshcheck generate`; do not edit. -->\n\n",
    );
    s.push_str("Every report lists these checks in this order (sorted by ID). Consumers act on `status` and the structured `measured`/`threshold` values, never on `message`. ");
    s.push_str("A check that has nothing to measure reports `skipped` with `measured.reason`; so does a check left out with `--only`/`--skip` (reason \"not selected\").\n\n");
    s.push_str("Status: an `error` check that breaches its threshold fails (and fails the report); a `warning` check warns; `info` checks only measure. ");
    s.push_str("Counts over the scene count what is drawn from the default scene (or scene 0): a mesh used by several nodes counts once per node, and every EXT_mesh_gpu_instancing instance counts.\n\n");
    s.push_str("| ID | Name | Category | Severity | Profile parameters |\n|---|---|---|---|---|\n");
    for c in CATALOG {
        s.push_str(&format!(
            "| [{}](#{}) | {} | {} | {} | {} |\n",
            c.id,
            c.id.to_lowercase(),
            c.name,
            c.category,
            c.severity.as_str(),
            c.params.join(", ")
        ));
    }
    let profiles: Vec<Profile> = BUILTIN_NAMES.iter().map(|n| Profile::builtin(n).expect("built-in profile")).collect();
    for (prefix, category) in FAMILIES {
        let in_family: Vec<_> = CATALOG.iter().filter(|c| c.id.starts_with(&format!("{prefix}-"))).collect();
        if in_family.is_empty() {
            continue;
        }
        s.push_str(&format!("\n## {prefix}: {category}\n"));
        for c in in_family {
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
                    let val =
                        if PARAMS.iter().any(|d| d.key == *k) { crate::checks::short(p.get(k)) } else { "0".into() };
                    s.push_str(&format!(" {val} |"));
                }
                s.push('\n');
            }
        }
    }
    s.push_str(include_str!("checks_notes.md"));
    s
}

/// Writes every generated file under `root`.
pub fn write_all(root: &Path) -> Result<()> {
    for (rel, bytes) in files() {
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
