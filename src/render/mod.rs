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
//! - [`device`]: the wgpu device and queue and the pipelines;
//!   [`textures`]: decoded textures, samplers and material bind groups.
//! - [`rig`]: angles, camera and lights. `shader.wgsl`: the PBR shader.
//! - [`renderer`]: the device and the drawing of a request; [`types`]: what
//!   a request asks for and gives; [`worker`]: drawing in a replaceable
//!   child process. This file only declares the parts and re-exports them.

pub mod device;
pub mod gif;
pub mod gpu;
pub mod image_out;
pub mod renderer;
pub mod rig;
pub mod textures;
pub mod types;
pub mod watermark;
pub mod worker;

pub use device::SAMPLES;
pub use renderer::Renderer;
pub use rig::{Angle, STANDARD_ANGLES};
pub use types::{Background, CHECK_SIZE, RenderRun, Rendered, Request, Still};
pub use worker::{Drawer, Source};

pub use crate::report::views::{AdapterInfo, DEFAULT_SIZE, MAX_ANGLES, SIZE_RANGE, TURNTABLE_FRAMES, TURNTABLE_SIZE};
