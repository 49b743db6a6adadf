//! `meshcheck inspect`: ask a vision model about the standard renders of an
//! asset (VIS-001 prompt match, VIS-002 texture artifacts, VIS-003 a
//! question) and print the inspect answer envelope. Non-deterministic by
//! nature; never part of a validate report.

use super::values::positive_seconds;
use crate::asset::{self, Input, LoadOptions};
use crate::error::{Error, ErrorCode, Result};
use crate::render::{Drawer, Source};
use crate::vision::{self, Check, Config, InspectAnswer};
use clap::Args;
use std::path::PathBuf;

/// Arguments of `meshcheck inspect`.
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

/// Runs `meshcheck inspect`.
pub fn run(args: InspectArgs) -> Result<i32> {
    let answer = answer(&args, &Drawer::Local)?;
    let json = serde_json::to_string_pretty(&answer).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
    println!("{json}");
    Ok(0)
}

/// The answer `meshcheck inspect` prints. Usage is checked first (exit 2),
/// then the provider's settings (INSPECT_UNAVAILABLE, exit 4), then the
/// stills are drawn by `drawer` (or read from `--render-dir`) and shown to
/// the model.
pub fn answer(args: &InspectArgs, drawer: &Drawer) -> Result<InspectAnswer> {
    let check = Check::parse(&args.check, args.prompt.as_deref(), args.question.as_deref())?;
    let mut config = Config::from_env()?;
    if let Some(t) = args.timeout {
        config.timeout = std::time::Duration::from_secs_f64(t);
    }
    if args.no_response_format {
        config.json_schema = false;
    }
    let stills = match (&args.render_dir, &args.file) {
        (Some(dir), _) => crate::engine::vision_stills_from_dir(dir)?,
        (None, Some(file)) => {
            let input = Input::from_path(file)
                .map_err(|e| Error::bad_request(format!("cannot read {}: {e}", file.display())))?;
            let source = Source::for_drawer(drawer, &input);
            let opened = asset::open(input)?;
            let local = matches!(drawer, Drawer::Local);
            let asset = asset::load_opened_with(&opened, LoadOptions { keep_images: local })?;
            crate::engine::vision_stills_with(drawer, &source, &asset)?
        }
        (None, None) => return Err(Error::bad_request("give FILE or --render-dir DIR")),
    };
    vision::inspect(&config, &check, &stills)
}
