//! `meshcheck render`: stills (and a turntable GIF) of one asset under the
//! studio rig, written into a folder; the render report JSON on stdout.

use super::RenderArgs;
use crate::asset::Input;
use crate::engine::{self, RenderJob};
use crate::error::{Error, Result};
use crate::render::{Angle, Background, Request, image_out};
use crate::report::TurntableSpec;
use std::io::Read;
use std::path::{Path, PathBuf};

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

/// Parses `--turntable` (its checks, such as the format, come later as BAD_REQUEST).
pub fn parse_turntable(s: &str) -> std::result::Result<TurntableSpec, String> {
    serde_json::from_str(s)
        .map_err(|e| format!("expected a JSON object such as {{\"frames\":36,\"format\":\"gif\",\"size\":512}}: {e}"))
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
    std::fs::create_dir_all(&dir)
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
    let json = serde_json::to_string_pretty(&out.report)
        .map_err(|e| Error::new(crate::error::ErrorCode::Internal, e.to_string()))?;
    println!("{json}");
    Ok(0)
}
