//! The process's renderer: one wgpu device, reused across files, drawing a
//! request's stills or a turntable.

use super::device::{Device, Pipelines, block_on};
use super::gpu::GpuScene;
use super::rig::{self, Angle};
use super::types::{Background, Rendered, Request};
use super::{gif, image_out};
use crate::asset::Asset;
use crate::error::{Error, ErrorCode, Result};
use crate::report::views::AdapterInfo;
use std::sync::{Arc, Mutex, OnceLock};

/// The process's renderer: one wgpu device, its pipelines, and a lock that
/// keeps one render at a time on it.
pub struct Renderer {
    gpu: Device,
    info: AdapterInfo,
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
        let pipelines = Pipelines::new(&device);
        Ok(Renderer { gpu: Device { device, queue, pipelines }, info, busy: Mutex::new(()) })
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
        let scene = GpuScene::upload(&self.gpu, asset)?;
        let mut stills = Vec::with_capacity(req.angles.len());
        for angle in &req.angles {
            let raw = scene.draw(&self.gpu, *angle, req.size)?;
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
        let scene = GpuScene::upload(&self.gpu, asset)?;
        let mut images = Vec::with_capacity(frames as usize);
        for i in 0..frames {
            let angle = Angle { rv: rig::TURNTABLE_ELEVATION, rh: i as f64 * 360.0 / frames as f64 };
            let raw = scene.draw(&self.gpu, angle, size)?;
            images.push(image_out::finish(raw, angle, background, None).image);
        }
        gif::encode_turntable(&images, gif::frame_delay_cs(frames))
            .map_err(|e| Error::new(ErrorCode::Internal, format!("the turntable GIF could not be encoded: {e}")))
    }
}
