//! Still descriptors: the views a render draws, the request limits, and the
//! adapter that drew them, as the report and the render report write them.
//!
//! These are plain data; the renderer (src/render) draws them and re-exports
//! them, so the report model needs nothing of the renderer.

use serde::{Deserialize, Serialize};

/// Smallest and largest still size, pixels.
pub const SIZE_RANGE: (u32, u32) = (128, 1024);
/// Default still size.
pub const DEFAULT_SIZE: u32 = 1024;
/// Most angles per render request.
pub const MAX_ANGLES: usize = 12;
/// Turntable frames: default and range.
pub const TURNTABLE_FRAMES: (u32, u32, u32) = (36, 8, 120);
/// Turntable size: default (range as [`SIZE_RANGE`]).
pub const TURNTABLE_SIZE: u32 = 512;

/// A view direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Angle {
    /// Elevation in degrees, -90 (from below) to 90 (from above).
    pub rv: f64,
    /// Azimuth in degrees around +Y, from the front (+Z) towards +X, 0 to 360.
    pub rh: f64,
}

/// The six standard views, in report order, with their names.
pub const STANDARD_ANGLES: [(&str, Angle); 6] = [
    ("front", Angle { rv: 0.0, rh: 0.0 }),
    ("right", Angle { rv: 0.0, rh: 90.0 }),
    ("back", Angle { rv: 0.0, rh: 180.0 }),
    ("left", Angle { rv: 0.0, rh: 270.0 }),
    ("top", Angle { rv: 90.0, rh: 0.0 }),
    ("three_quarter", Angle { rv: 30.0, rh: 45.0 }),
];

impl Angle {
    /// Checks the ranges; `rh` of exactly 360 is accepted as 0.
    pub fn validate(&self) -> Result<Angle, String> {
        if !self.rv.is_finite() || !(-90.0..=90.0).contains(&self.rv) {
            return Err(format!("rv must be within -90..90 degrees, got {}", self.rv));
        }
        if !self.rh.is_finite() || !(0.0..=360.0).contains(&self.rh) {
            return Err(format!("rh must be within 0..360 degrees, got {}", self.rh));
        }
        Ok(Angle { rv: self.rv, rh: if self.rh == 360.0 { 0.0 } else { self.rh } })
    }

    /// The standard name of this angle, if it is one of the six.
    pub fn standard_name(&self) -> Option<&'static str> {
        STANDARD_ANGLES.iter().find(|(_, a)| a == self).map(|(n, _)| *n)
    }

    /// File stem for a still: the standard name, or `rv{rv}_rh{rh}`.
    pub fn file_stem(&self, index: usize) -> String {
        match self.standard_name() {
            Some(n) => n.to_string(),
            None => format!("view{index:02}_rv{}_rh{}", fmt_deg(self.rv), fmt_deg(self.rh)),
        }
    }
}

fn fmt_deg(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.replace('-', "m").replace('.', "p")
}

/// The graphics adapter in use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AdapterInfo {
    /// Adapter name, e.g. `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    /// Backend, e.g. `vulkan`.
    pub backend: String,
    /// Driver name and version.
    pub driver: String,
    /// Whether it is a CPU (software) renderer.
    pub software: bool,
}
