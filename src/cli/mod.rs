//! The command line: clap definitions and dispatch. `main.rs` only calls [`main`].
//!
//! Subcommands live one per file; output formats (table, JSON, JUnit) live
//! in `output.rs`, the generated files (completions, man pages, schemas,
//! docs/checks.md) in `generate.rs`.

pub mod catalog_cmd;
pub mod generate;
#[cfg(all(feature = "render", feature = "vision"))]
pub mod inspect_cmd;
pub mod output;
#[cfg(feature = "render")]
pub mod render_cmd;
#[cfg(feature = "serve")]
pub mod serve_cmd;
pub mod validate;

use crate::error::Error;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;

/// meshcheck validates glTF 2.0 assets (GLB, .gltf with its resources, or a
/// .zip bundle) and writes a machine-readable report card: per-check status
/// with measured and threshold values, and a pass/warn/fail verdict.
#[derive(Debug, Parser)]
#[command(name = "meshcheck", version, about, long_about = None, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate assets (files or folders) and print their reports.
    Validate(ValidateArgs),
    /// List the check catalog with the thresholds of a profile.
    Checks(ChecksArgs),
    /// Show the built-in budget profiles side by side.
    Profiles(ProfilesArgs),
    /// Render stills (and a turntable GIF) of one asset under the studio rig.
    #[cfg(feature = "render")]
    Render(RenderArgs),
    /// Ask a vision model about the renders (VIS-001, VIS-002, VIS-003).
    #[cfg(all(feature = "render", feature = "vision"))]
    Inspect(InspectArgs),
    /// Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks).
    #[cfg(feature = "serve")]
    Serve(serve_cmd::ServeArgs),
    /// Create and list service accounts (in the server's data folder).
    #[cfg(feature = "serve")]
    Accounts(serve_cmd::AccountsArgs),
    /// Create and revoke API keys of service accounts.
    #[cfg(feature = "serve")]
    Keys(serve_cmd::KeysArgs),
    /// Regenerate completions, man pages, schemas and docs/checks.md (for maintainers).
    #[command(hide = true)]
    Generate(GenerateArgs),
    /// Draw stills over stdin and stdout (started by `meshcheck serve`, and by
    /// `meshcheck validate --mode full` for more than one file).
    #[command(hide = true)]
    #[cfg(feature = "render")]
    RenderWorker,
}

/// Output formats of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table per file, with a summary for folder runs (default on a terminal).
    Table,
    /// The report JSON, exactly as the service returns it (default otherwise).
    Json,
    /// JUnit XML: one testcase per check per file.
    Junit,
}

/// Output formats of `checks` and `profiles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListFormat {
    /// A table.
    Table,
    /// JSON.
    Json,
}

/// Modes, as on the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Measurements only; RND checks are skipped.
    #[value(name = "checks_only")]
    ChecksOnly,
    /// Measurements plus the renderer.
    #[value(name = "full")]
    Full,
}

/// `--fail-on` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Exit 1 when a report's verdict is fail (the default).
    Fail,
    /// Exit 1 when a report's verdict is warn or fail.
    Warn,
}

/// Arguments of `meshcheck validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files (.glb, .gltf, .zip; the format is sniffed from the bytes) or
    /// folders (walked recursively for .glb, .gltf and .zip). `-` reads
    /// standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Also write one NAME.report.json per input into DIR (mirroring subfolders).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Budget profile: web, mobile, pc, hero, or a path to a .toml file.
    #[arg(long, default_value = "web", value_name = "NAME|FILE.toml")]
    pub profile: String,
    /// Replace one budget (repeatable): max_tris, max_verts, max_texture_dim,
    /// max_texture_mem, max_materials, max_draw_calls, max_file_bytes,
    /// min_extent, max_extent.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Weld tolerance for geometry checks, in metres [default: the profile's, 1e-5].
    #[arg(long, value_name = "METRES")]
    pub weld_tolerance: Option<f64>,
    /// Run only these checks or families (IDs such as PERF-001, or PERF, or performance).
    #[arg(long, value_delimiter = ',', value_name = "ID|FAMILY,...")]
    pub only: Vec<String>,
    /// Skip these checks or families; they report `skipped` ("not selected").
    #[arg(long, value_delimiter = ',', value_name = "ID|FAMILY,...")]
    pub skip: Vec<String>,
    /// Exit 1 on this verdict or worse.
    #[arg(long, value_enum, default_value = "fail", value_name = "LEVEL")]
    pub fail_on: FailOn,
    /// checks_only, or full (needs the renderer).
    #[arg(long, value_enum, default_value = "checks_only")]
    pub mode: ModeArg,
    /// Seconds the glTF-Validator may spend on one file before SPEC-001 is
    /// skipped with "validator timed out".
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS", value_parser = positive_seconds)]
    pub validator_timeout: f64,
    /// Files validated in parallel [default: all cores].
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// With --mode full: write the six standard stills next to the report
    /// (into --output-dir, or NAME-screenshots/ in the current directory) and
    /// list them under `screenshots`.
    #[arg(long)]
    pub screenshots: bool,
    /// With --mode full: stamp this text on the stills.
    #[arg(long, value_name = "TEXT")]
    pub watermark: Option<String>,
}

/// Arguments of `meshcheck inspect`.
#[cfg(all(feature = "render", feature = "vision"))]
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The asset (.glb, .gltf, .zip); not needed with --render-dir.
    #[arg(value_name = "FILE", required_unless_present = "render_dir")]
    pub file: Option<PathBuf>,
    /// VIS-001 (prompt match; needs --prompt), VIS-002 (texture artifacts) or
    /// VIS-003 (freeform; needs --question).
    #[arg(long, value_name = "ID")]
    pub check: String,
    /// What the asset should be (VIS-001), e.g. "a red office chair".
    #[arg(long, value_name = "TEXT")]
    pub prompt: Option<String>,
    /// The question (VIS-003).
    #[arg(long, value_name = "TEXT")]
    pub question: Option<String>,
    /// Reuse the stills `meshcheck render` wrote into DIR instead of rendering.
    #[arg(long, value_name = "DIR")]
    pub render_dir: Option<PathBuf>,
    /// Seconds to wait for the model [default: MESHCHECK_VISION_TIMEOUT or 60].
    #[arg(long, value_name = "SECONDS", value_parser = positive_seconds)]
    pub timeout: Option<f64>,
    /// Do not ask for `response_format: json_schema` (providers without
    /// structured output); the reply is checked against the schema anyway.
    #[arg(long)]
    pub no_response_format: bool,
}

/// Lighting rigs.
#[cfg(feature = "render")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lighting {
    /// Three-point studio lighting with a neutral ambient term.
    Studio,
}

/// Arguments of `meshcheck render`.
#[cfg(feature = "render")]
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The asset (.glb, .gltf, .zip); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Views as JSON, e.g. '[{"rv":30,"rh":45}]': rv elevation -90..90, rh
    /// azimuth 0..360 around +Y from the front; at most 12 [default: the six
    /// standard views front, right, back, left, top, three_quarter].
    #[arg(long, value_name = "JSON", value_parser = render_cmd::parse_angles)]
    pub angles: Option<render_cmd::AngleList>,
    /// Width and height of each still, 128 to 1024.
    #[arg(long, default_value_t = crate::render::DEFAULT_SIZE, value_parser = clap::value_parser!(u32).range(128..=1024))]
    pub size: u32,
    /// Background: '#RRGGBB' or transparent.
    #[arg(long, default_value = "#F2F2F2", value_name = "COLOR", value_parser = render_cmd::parse_background)]
    pub background: crate::render::Background,
    /// Lighting rig.
    #[arg(long, value_enum, default_value = "studio")]
    pub lighting: Lighting,
    /// Also render a turntable GIF, e.g. '{"frames":36,"format":"gif","size":512}'
    /// (frames 8..120, default 36; size 128..1024, default 512; gif only).
    #[arg(long, value_name = "JSON", value_parser = render_cmd::parse_turntable)]
    pub turntable: Option<crate::report::TurntableSpec>,
    /// Folder for the PNGs and turntable.gif [default: FILE-STEM-render].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Stamp this text on the stills.
    #[arg(long, value_name = "TEXT")]
    pub watermark: Option<String>,
}

fn positive_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v <= 86_400.0 => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds between 0 and 86400")),
    }
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

/// Arguments of the hidden `meshcheck generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The repository root to write into.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Whether colour is wanted on a stream (a terminal, and NO_COLOR unset or empty).
pub fn colour_on(terminal: bool) -> bool {
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A miette diagnostic built from an engine error.
#[derive(Debug)]
pub struct Diagnostic {
    code: String,
    text: String,
    help: Option<String>,
}

impl Diagnostic {
    /// From an error, naming the file it concerns.
    pub fn new(err: &Error, file: Option<&str>) -> Diagnostic {
        let text = match file {
            Some(f) => format!("{f}: {}", err.message),
            None => err.message.clone(),
        };
        let help = err.help.clone().or_else(|| default_help(err));
        Diagnostic { code: err.code.as_str().to_string(), text, help }
    }
}

fn default_help(err: &Error) -> Option<String> {
    use crate::error::ErrorCode::*;
    Some(
        match err.code {
            MalformedGltf => "the file is damaged or was written by a broken exporter; re-export it, or run the Khronos glTF-Validator for the details",
            BundleIncomplete => "add the missing files to the bundle (or next to the .gltf) at the paths its URIs give",
            UnsupportedFormat => "meshcheck reads .glb, .gltf (with its resources) and .zip bundles",
            BadRequest => "see `meshcheck validate --help`",
            _ => return None,
        }
        .to_string(),
    )
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.code))
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn std::fmt::Display>)
    }
}

/// Prints an error on standard error through miette.
pub fn print_error(err: &Error, file: Option<&str>) {
    let diag = Diagnostic::new(err, file);
    let theme = if colour_on(std::io::stderr().is_terminal()) {
        miette::GraphicalTheme::unicode()
    } else {
        miette::GraphicalTheme::unicode_nocolor()
    };
    let mut out = String::new();
    let handler = miette::GraphicalReportHandler::new_themed(theme).with_width(100);
    if handler.render_report(&mut out, &diag).is_err() {
        out = format!("error[{}]: {}\n", diag.code, diag.text);
    }
    eprint!("{out}");
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Validate(args) => validate::run(args),
        Command::Checks(args) => catalog_cmd::checks(args),
        Command::Profiles(args) => catalog_cmd::profiles(args),
        #[cfg(feature = "render")]
        Command::Render(args) => render_cmd::run(args),
        #[cfg(all(feature = "render", feature = "vision"))]
        Command::Inspect(args) => inspect_cmd::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve_cmd::serve(args),
        #[cfg(feature = "render")]
        Command::RenderWorker => Ok(crate::render::worker::serve_stdio()),
        #[cfg(feature = "serve")]
        Command::Accounts(args) => serve_cmd::accounts(args),
        #[cfg(feature = "serve")]
        Command::Keys(args) => serve_cmd::keys(args),
        Command::Generate(args) => generate::write_all(&args.dir).map(|_| 0),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            print_error(&e, None);
            e.code.exit_code()
        }
    }
}
