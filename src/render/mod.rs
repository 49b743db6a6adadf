//! The studio renderer: offscreen, headless wgpu stills and turntables of a
//! loaded asset, for `meshcheck render`, full-mode validation (RND-001..003)
//! and the vision model.
//!
//! - One device per process ([`Renderer::shared`]), reused across files; any
//!   adapter wgpu finds, Mesa's lavapipe where there is no GPU. No adapter
//!   at all is an environment error (RENDER_FAILED, exit 4).
//! - [`gpu`] uploads a scene (vertex and index buffers per primitive, one
//!   draw per instance, materials and textures) once per request; each view
//!   is a 4x MSAA pass into an sRGB target cleared to transparent, so the
//!   alpha channel is the silhouette: coverage is measured from it, and the
//!   background is composited afterwards ([`image_out`]).
//! - [`rig`]: angles, camera and lights. `shader.wgsl`: the PBR shader.

pub mod gif;
pub mod gpu;
pub mod image_out;
pub mod rig;
pub mod watermark;
pub mod worker;

use crate::asset::Asset;
use crate::error::{Error, ErrorCode, Result};
use image::RgbaImage;
pub use rig::{Angle, STANDARD_ANGLES};
use std::sync::{Arc, Mutex, OnceLock};
pub use worker::{Drawer, Source};

pub use crate::report::views::{AdapterInfo, DEFAULT_SIZE, MAX_ANGLES, SIZE_RANGE, TURNTABLE_FRAMES, TURNTABLE_SIZE};
/// MSAA sample count.
pub const SAMPLES: u32 = 4;
/// The stills the RND checks measure are rendered at this size.
pub const CHECK_SIZE: u32 = 512;

/// What is behind the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    /// An opaque sRGB colour.
    Color([u8; 3]),
    /// Transparent (the PNG keeps the alpha channel).
    Transparent,
}

impl Default for Background {
    fn default() -> Self {
        Background::Color([0xF2, 0xF2, 0xF2])
    }
}

impl Background {
    /// Parses `#RRGGBB` or `transparent`.
    pub fn parse(s: &str) -> std::result::Result<Background, String> {
        if s.eq_ignore_ascii_case("transparent") {
            return Ok(Background::Transparent);
        }
        let hex = s.strip_prefix('#').filter(|h| h.len() == 6 && h.bytes().all(|b| b.is_ascii_hexdigit()));
        match hex {
            Some(h) => {
                let byte = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0);
                Ok(Background::Color([byte(0), byte(2), byte(4)]))
            }
            None => Err(format!("background must be #RRGGBB or transparent, got {s:?}")),
        }
    }
}

impl std::fmt::Display for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Background::Color([r, g, b]) => write!(f, "#{r:02X}{g:02X}{b:02X}"),
            Background::Transparent => f.write_str("transparent"),
        }
    }
}

/// What to render.
#[derive(Debug, Clone)]
pub struct Request {
    /// The views, in order (at most [`MAX_ANGLES`]).
    pub angles: Vec<Angle>,
    /// Width and height of each still.
    pub size: u32,
    /// Background.
    pub background: Background,
    /// Text stamped on every still (demo mode).
    pub watermark: Option<String>,
}

impl Request {
    /// The six standard views at `size`.
    pub fn standard(size: u32) -> Request {
        Request {
            angles: STANDARD_ANGLES.iter().map(|(_, a)| *a).collect(),
            size,
            background: Background::default(),
            watermark: None,
        }
    }
}

/// One rendered view.
#[derive(Debug, Clone)]
pub struct Still {
    /// The view.
    pub angle: Angle,
    /// The image, background composited (or transparent), watermark stamped.
    pub image: RgbaImage,
    /// Pixels the model covers (coverage alpha at least one half).
    pub visible_pixels: u64,
}

impl Still {
    /// Share of the frame the model covers, in %.
    pub fn visible_pct(&self) -> f64 {
        let total = (self.image.width() as u64 * self.image.height() as u64).max(1);
        self.visible_pixels as f64 / total as f64 * 100.0
    }

    /// The report's entry for the `index`-th still of a render (no `path` or `url` yet).
    pub fn screenshot(&self, index: usize) -> crate::report::Screenshot {
        crate::report::Screenshot {
            name: self.angle.file_stem(index),
            angle: self.angle,
            size: self.image.width(),
            path: None,
            url: None,
            visible_pct: (self.visible_pct() * 100.0).round() / 100.0,
        }
    }
}

/// What a render request produced.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// One still per requested angle, in order.
    pub stills: Vec<Still>,
    /// Triangles drawn per view (per instance).
    pub triangles: u64,
    /// Draw calls per view.
    pub draw_calls: u64,
    /// Wall time of upload and drawing, milliseconds.
    pub render_ms: f64,
    /// What the renderer could not draw as the file asks (undecodable
    /// textures, KTX2 drawn with factors only).
    pub notes: Vec<String>,
}

/// What the RND checks get from the renderer (full mode): the standard
/// views, or why this asset could not be drawn.
pub type RenderRun = std::result::Result<Rendered, String>;

/// The process's renderer: one wgpu device, its pipelines, and a lock that
/// keeps one render at a time on it.
pub struct Renderer {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: AdapterInfo,
    pub(crate) pipelines: gpu::Pipelines,
    busy: Mutex<()>,
}

static SHARED: OnceLock<std::result::Result<Arc<Renderer>, String>> = OnceLock::new();

impl Renderer {
    /// The process-wide renderer, created on first use. No adapter is
    /// RENDER_FAILED with the package to install.
    pub fn shared() -> Result<Arc<Renderer>> {
        SHARED.get_or_init(|| Renderer::new().map(Arc::new)).clone().map_err(|why| {
            Error::new(ErrorCode::RenderFailed, format!("no graphics adapter is available: {why}")).with_help(
                "install a GPU driver, or Mesa's software Vulkan driver (Debian/Ubuntu: apt-get install mesa-vulkan-drivers libvulkan1)",
            )
        })
    }

    fn new() -> std::result::Result<Renderer, String> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let adapter =
            block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default())).map_err(|e| e.to_string())?;
        let ai = adapter.get_info();
        let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("meshcheck"),
            required_limits: adapter.limits(),
            ..Default::default()
        }))
        .map_err(|e| e.to_string())?;
        let info = AdapterInfo {
            name: ai.name.clone(),
            backend: format!("{:?}", ai.backend).to_lowercase(),
            driver: format!("{} {}", ai.driver, ai.driver_info).trim().to_string(),
            software: ai.device_type == wgpu::DeviceType::Cpu,
        };
        let pipelines = gpu::Pipelines::new(&device);
        Ok(Renderer { device, queue, info, pipelines, busy: Mutex::new(()) })
    }

    /// The adapter in use.
    pub fn adapter(&self) -> &AdapterInfo {
        &self.info
    }

    /// Renders the stills `req` asks for. Errors are RENDER_FAILED: the
    /// device refused the scene (e.g. a buffer beyond its limits).
    pub fn render(&self, asset: &Asset, req: &Request) -> Result<Rendered> {
        let _one_at_a_time = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let started = std::time::Instant::now();
        let scene = gpu::GpuScene::upload(self, asset)?;
        let mut stills = Vec::with_capacity(req.angles.len());
        for angle in &req.angles {
            let raw = scene.draw(self, *angle, req.size)?;
            stills.push(image_out::finish(raw, *angle, req.background, req.watermark.as_deref()));
        }
        Ok(Rendered {
            stills,
            triangles: scene.triangles,
            draw_calls: scene.draw_calls,
            render_ms: started.elapsed().as_secs_f64() * 1000.0,
            notes: scene.notes.iter().map(ToString::to_string).collect(),
        })
    }

    /// Renders a turntable: `frames` views spinning about +Y at the
    /// three-quarter elevation, encoded as a looping GIF.
    pub fn turntable(&self, asset: &Asset, frames: u32, size: u32, background: Background) -> Result<Vec<u8>> {
        let _one_at_a_time = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let scene = gpu::GpuScene::upload(self, asset)?;
        let mut images = Vec::with_capacity(frames as usize);
        for i in 0..frames {
            let angle = Angle { rv: rig::TURNTABLE_ELEVATION, rh: i as f64 * 360.0 / frames as f64 };
            let raw = scene.draw(self, angle, size)?;
            images.push(image_out::finish(raw, angle, background, None).image);
        }
        gif::encode_turntable(&images, gif::frame_delay_cs(frames))
            .map_err(|e| Error::new(ErrorCode::Internal, format!("the turntable GIF could not be encoded: {e}")))
    }
}

/// Drives a wgpu future to completion on this thread (native wgpu futures
/// complete once the device has been polled).
pub(crate) fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    loop {
        if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backgrounds_parse() {
        assert_eq!(Background::parse("#FF8000").unwrap(), Background::Color([255, 128, 0]));
        assert_eq!(Background::parse("#ff8000").unwrap().to_string(), "#FF8000");
        assert_eq!(Background::parse("Transparent").unwrap(), Background::Transparent);
        for bad in ["", "#FFF", "FF8000", "#GG0000", "#FF80001", "red"] {
            assert!(Background::parse(bad).is_err(), "{bad}");
        }
    }
}
