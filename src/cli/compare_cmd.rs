//! `meshcheck compare OLD NEW`: what changed between two assets, or two
//! report JSON files, or one of each, and whether NEW is worse (exit 1) or
//! not (exit 0). `compare.rs` holds the comparison and its formats.
//!
//! A side is a report when its bytes are a JSON object with
//! `schema_version`, `verdict` and `checks` (what `validate --format json`
//! prints for one file); anything else is an asset and is validated now
//! with the settings `validate` would give it: the meshcheck.toml found
//! above it, then the flags (`--profile`, `--override`, `--only`/`--skip`,
//! `--mode`, `--config`, `--no-config`). The checks compared, on report
//! sides too, are those NEW's settings select. In full mode the stills of an asset side are
//! compared view by view; a report side brings the stills its
//! `screenshots` list (`validate --screenshots`) when their PNGs are still
//! there.

use super::compare::{self, Side, Still};
use super::config::{EngineFlags, Resolver, SettingFlags};
use super::values::positive_seconds;
use crate::asset::Input;
use crate::engine::{self, Options, Selection};
use crate::error::{Error, Result};
use crate::report::Report;
use clap::{Args, ValueEnum};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Output formats of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    /// Tables of status changes and deltas (default on a terminal).
    Table,
    /// The comparison as JSON (default otherwise).
    Json,
    /// Markdown, for a pull-request comment or a job summary.
    Markdown,
    /// One self-contained HTML page; with --mode full, the stills of both
    /// sides side by side with a per-view difference.
    Html,
}

/// Arguments of `meshcheck compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The old side: an asset (.glb, .gltf, .zip) or a report JSON file
    /// (`meshcheck validate --format json`), told apart by content.
    #[arg(value_name = "OLD")]
    pub old: PathBuf,
    /// The new side, likewise.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<CompareFormat>,
    /// How much a budget figure (a check's gauge value such as triangles or
    /// texture memory, or a stats count) may grow before NEW is worse, in %
    /// of OLD's value.
    #[arg(long, default_value_t = 0.0, value_name = "PCT", value_parser = tolerance)]
    pub tolerance: f64,
    /// The settings for asset sides: these flags win over the meshcheck.toml
    /// found above each side, as for validate (docs/config.md).
    #[command(flatten)]
    pub settings: EngineFlags,
    /// Seconds the glTF-Validator may spend on one file.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS", value_parser = positive_seconds)]
    pub validator_timeout: f64,
}

/// Parses `--tolerance`: a percentage, 0 or more.
pub fn tolerance(s: &str) -> std::result::Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(v) if v >= 0.0 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a percentage of 0 or more")),
    }
}

/// What a path holds.
enum Kind {
    Report(Box<Report>),
    Asset,
}

/// Reads a side's bytes and tells a report JSON file from an asset.
fn kind(path: &Path) -> Result<Kind> {
    let meta =
        std::fs::metadata(path).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(Error::bad_request(format!(
            "{} is a folder: compare takes two files (assets or report JSON files)",
            path.display()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))?;
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if !matches!(first, Some(b'{' | b'[')) {
        return Ok(Kind::Asset);
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes) else { return Ok(Kind::Asset) };
    let is_report = |v: &serde_json::Value| {
        v.get("schema_version").is_some() && v.get("verdict").is_some() && v.get("checks").is_some_and(|c| c.is_array())
    };
    if let Some(list) = value.as_array() {
        if !list.is_empty() && list.iter().all(|v| is_report(v) || v.get("error").is_some()) {
            return Err(Error::bad_request(format!(
                "{} holds {} reports (a folder run): compare takes one report per side (validate --output-dir writes one per file)",
                path.display(),
                list.len()
            )));
        }
        return Ok(Kind::Asset);
    }
    if value.get("error").is_some() && value.get("checks").is_none() {
        return Err(Error::bad_request(format!(
            "{} is an error envelope (the file could not be validated), not a report",
            path.display()
        )));
    }
    if !is_report(&value) {
        return Ok(Kind::Asset);
    }
    serde_json::from_value::<Report>(value).map(|r| Kind::Report(Box::new(r))).map_err(|e| {
        Error::bad_request(format!("{} looks like a meshcheck report but does not fit its schema: {e}", path.display()))
    })
}

/// The options of each side: `None` for a report side.
pub type SideOptions = [Option<Options>; 2];

/// Engine options for each asset side: the settings resolved for its path
/// (meshcheck.toml above it, then the flags), as `validate` would give it;
/// then `setup` gives them what the caller shares (a validator pool, a
/// drawer) and fails early when the environment lacks either.
fn options(paths: [&Path; 2], kinds: [&Kind; 2], resolver: &mut Resolver, setup: Setup<'_>) -> Result<SideOptions> {
    let mut out: SideOptions = [None, None];
    for i in 0..2 {
        if matches!(kinds[i], Kind::Asset) {
            let key = resolver.resolve(Some(paths[i]))?.engine();
            out[i] = Some(resolver.options(&key)?);
        }
    }
    setup(&mut out)?;
    Ok(out)
}

/// What the caller of [`comparison`] gives the asset sides' options.
pub type Setup<'a> = &'a dyn Fn(&mut SideOptions) -> Result<()>;

/// The CLI's setup: one validator pool for both sides, and a local drawer
/// that must find an adapter (exit 4 before any work when none).
fn cli_setup(validator_timeout: f64) -> impl Fn(&mut SideOptions) -> Result<()> {
    move |opts: &mut SideOptions| {
        if opts.iter().flatten().any(Options::runs_validator) {
            let timeout = std::time::Duration::from_secs_f64(validator_timeout);
            let pool = std::sync::Arc::new(crate::validator::Validator::start(timeout)?);
            opts.iter_mut().flatten().for_each(|o| o.validator = Some(pool.clone()));
        }
        #[cfg(feature = "render")]
        if opts.iter().flatten().any(Options::renders) {
            crate::render::Drawer::Local.ready()?;
        }
        Ok(())
    }
}

/// Validates an asset side, keeping its stills (full mode).
fn asset_side(path: &Path, opts: &Options) -> Result<Side> {
    let input =
        Input::from_path(path).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))?;
    let (report, rendered) = engine::validate_with_stills(input, opts).map_err(|mut e| {
        e.message = format!("{}: {}", path.display(), e.message);
        e
    })?;
    Ok(Side { path: path.display().to_string(), from_report: false, report, stills: stills_of(rendered) })
}

#[cfg(feature = "render")]
fn stills_of(rendered: Option<engine::Rendered>) -> Vec<Still> {
    rendered
        .map(|r| {
            r.stills
                .into_iter()
                .enumerate()
                .map(|(i, s)| Still { name: s.angle.file_stem(i), image: s.image })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(not(feature = "render"))]
fn stills_of(rendered: Option<engine::Rendered>) -> Vec<Still> {
    match rendered {
        Some(never) => match never {},
        None => Vec::new(),
    }
}

/// A report side, with the stills its `screenshots` list when their PNGs
/// can be read (as written, or beside the report file).
fn report_side(path: &Path, report: Report) -> Side {
    let base = path.parent().unwrap_or(Path::new(""));
    let stills = report
        .screenshots
        .iter()
        .flatten()
        .filter_map(|shot| {
            let p = PathBuf::from(shot.path.as_ref()?);
            let found = if p.is_file() { p } else { base.join(&p) };
            let image = image::open(&found).ok()?.into_rgba8();
            Some(Still { name: shot.name.clone(), image })
        })
        .collect();
    Side { path: path.display().to_string(), from_report: true, report, stills }
}

/// Compares OLD with NEW: each side read (a report) or validated (an
/// asset, with the settings `flags` and meshcheck.toml give it), then
/// compared over the checks NEW's settings select. Returns the comparison
/// and both sides (their stills, for the HTML page).
pub fn comparison(
    old: &Path,
    new: &Path,
    flags: &EngineFlags,
    tolerance_pct: f64,
    setup: Setup<'_>,
) -> Result<(compare::Comparison, Side, Side)> {
    let mut resolver = Resolver::new(&SettingFlags::from(flags.clone()))?;
    let chosen = resolver.resolve(Some(new))?;
    let selection = Selection::parse(&chosen.only.value, &chosen.skip.value)?;
    let [old_kind, new_kind] = [kind(old)?, kind(new)?];
    let [old_opts, new_opts] = options([old, new], [&old_kind, &new_kind], &mut resolver, setup)?;
    let side = |path: &Path, kind: Kind, opts: Option<&Options>| -> Result<Side> {
        match (kind, opts) {
            (Kind::Report(r), _) => Ok(report_side(path, *r)),
            (Kind::Asset, Some(opts)) => asset_side(path, opts),
            (Kind::Asset, None) => Err(Error::internal("no options were made for an asset side")),
        }
    };
    // The two sides are validated at once.
    let (old_side, new_side) = std::thread::scope(|s| {
        let new_side = s.spawn(|| side(new, new_kind, new_opts.as_ref()));
        let old_side = side(old, old_kind, old_opts.as_ref());
        (old_side, new_side.join().unwrap_or_else(|_| Err(Error::internal("the validation of NEW panicked"))))
    });
    let (old_side, new_side) = (old_side?, new_side?);
    let c = compare::compare(&old_side, &new_side, tolerance_pct, &selection);
    Ok((c, old_side, new_side))
}

/// Runs `meshcheck compare`.
pub fn run(args: CompareArgs) -> Result<i32> {
    let setup = cli_setup(args.validator_timeout);
    let (comparison, old, new) = comparison(&args.old, &args.new, &args.settings, args.tolerance, &setup)?;
    let format =
        args.format.unwrap_or(if std::io::stdout().is_terminal() { CompareFormat::Table } else { CompareFormat::Json });
    let text = match format {
        CompareFormat::Table => compare::table(&comparison),
        CompareFormat::Json => compare::json(&comparison),
        CompareFormat::Markdown => compare::markdown(&comparison),
        CompareFormat::Html => compare::html(&comparison, &old, &new),
    };
    super::output::emit(&text);
    Ok(i32::from(comparison.worse))
}
