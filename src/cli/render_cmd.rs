//! `meshcheck render`: stills (and a turntable GIF) of one asset under the
//! studio rig, written into a folder; the render report JSON on stdout.

use crate::asset::Input;
use crate::engine::{self, RenderJob, RenderOutput};
use crate::error::{Error, Result};
use crate::render::{Angle, Background, Request, image_out};
use crate::report::TurntableSpec;
use clap::{Args, ValueEnum};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Lighting rigs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Lighting {
    /// Three-point studio lighting with a neutral ambient term.
    Studio,
}

/// Arguments of `meshcheck render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The asset (.glb, .gltf, .zip); `-` reads standard input.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Views as JSON, e.g. '[{"rv":30,"rh":45}]': rv elevation -90..90, rh
    /// azimuth 0..360 around +Y from the front; at most 12 [default: the six
    /// standard views front, right, back, left, top, three_quarter].
    #[arg(long, value_name = "JSON", value_parser = parse_angles)]
    pub angles: Option<AngleList>,
    /// Width and height of each still, 128 to 1024.
    #[arg(long, default_value_t = crate::render::DEFAULT_SIZE, value_parser = clap::value_parser!(u32).range(128..=1024))]
    pub size: u32,
    /// Background: '#RRGGBB' or transparent.
    #[arg(long, default_value = "#F2F2F2", value_name = "COLOR", value_parser = parse_background)]
    pub background: Background,
    /// Lighting rig.
    #[arg(long, value_enum, default_value = "studio")]
    pub lighting: Lighting,
    /// Also render a turntable GIF, e.g. '{"frames":36,"format":"gif","size":512}'
    /// (frames 8..120, default 36; size 128..1024, default 512; gif only).
    #[arg(long, value_name = "JSON", value_parser = super::values::turntable_spec)]
    pub turntable: Option<TurntableSpec>,
    /// Folder for the PNGs and turntable.gif [default: FILE-STEM-render].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Stamp this text on the stills.
    #[arg(long, value_name = "TEXT")]
    pub watermark: Option<String>,
}

/// The views of `--angles` (one argument holding a JSON array).
#[derive(Debug, Clone, PartialEq)]
pub struct AngleList(pub Vec<Angle>);

/// Parses `--angles`: a JSON array of `{"rv": .., "rh": ..}`, 1 to 12 items, in range.
pub fn parse_angles(s: &str) -> std::result::Result<AngleList, String> {
    let angles: Vec<Angle> = serde_json::from_str(s)
        .map_err(|e| format!("expected a JSON array of {{\"rv\": number, \"rh\": number}}: {e}"))?;
    if angles.is_empty() || angles.len() > crate::render::MAX_ANGLES {
        return Err(format!("1 to {} angles, got {}", crate::render::MAX_ANGLES, angles.len()));
    }
    angles.iter().map(Angle::validate).collect::<std::result::Result<Vec<_>, _>>().map(AngleList)
}

/// Parses `--background`.
pub fn parse_background(s: &str) -> std::result::Result<Background, String> {
    Background::parse(s)
}

fn read_input(path: &Path) -> Result<Input> {
    if path.as_os_str() == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::bad_request(format!("cannot read standard input: {e}")))?;
        return Ok(Input::from_bytes("-", bytes));
    }
    Input::from_path(path).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))
}

/// The default output folder: `<file stem>-render` in the current directory.
pub fn default_out(path: &Path) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).filter(|s| !s.is_empty() && *s != "-").unwrap_or("stdin");
    PathBuf::from(format!("{stem}-render"))
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::bad_request(format!("cannot write {}: {e}", path.display())))
}

/// Writes the stills (`NAME.png`) and the turntable (`turntable.gif`) into
/// `dir`, creating it, and fills in their paths in the report.
pub fn write_files(dir: &Path, out: &mut RenderOutput) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::bad_request(format!("cannot create the folder {}: {e}", dir.display())))?;
    for (shot, still) in out.report.screenshots.iter_mut().zip(&out.stills) {
        let path = dir.join(format!("{}.png", shot.name));
        write(&path, &image_out::png(&still.image))?;
        shot.path = Some(path.display().to_string());
    }
    if let (Some(gif), Some(tt)) = (&out.gif, out.report.turntable.as_mut()) {
        let path = dir.join("turntable.gif");
        write(&path, gif)?;
        tt.path = Some(path.display().to_string());
    }
    Ok(())
}

/// Runs `meshcheck render`.
pub fn run(args: RenderArgs) -> Result<i32> {
    let job = RenderJob {
        request: Request {
            angles: args.angles.clone().map(|a| a.0).unwrap_or_else(|| Request::standard(args.size).angles),
            size: args.size,
            background: args.background,
            watermark: args.watermark.clone(),
        },
        turntable: args.turntable.clone(),
    };
    job.check()?;
    let input = read_input(&args.file)?;
    let mut out = engine::render(input, &job)?;
    let dir = args.out.clone().unwrap_or_else(|| default_out(&args.file));
    write_files(&dir, &mut out)?;
    let json = serde_json::to_string_pretty(&out.report)
        .map_err(|e| Error::new(crate::error::ErrorCode::Internal, e.to_string()))?;
    println!("{json}");
    Ok(0)
}
