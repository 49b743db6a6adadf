//! The scene on the device: pipelines, buffers, materials and textures, and
//! drawing one view.
//!
//! - Vertices are interleaved (position, normal, tangent, two UV sets,
//!   colour: 72 bytes); missing normals and tangents are zero, which the
//!   shader reads as "derive from the screen-space derivatives".
//! - Every drawn instance is one draw call whose matrices live in a storage
//!   buffer indexed by the instance index. The scene is recentred on its
//!   bounding-sphere centre in f64 before the matrices become f32, so
//!   far-from-origin assets keep their precision.
//! - Pipelines are keyed by (blend, double-sided, mirrored): blending
//!   materials draw after the opaque ones, back to front, without depth
//!   writes; mirrored instances (negative determinant) wind clockwise.
//! - Textures are decoded with `image` under limits ([`MAX_DECODE_DIM`],
//!   [`MAX_DECODE_BYTES`]), in parallel, reduced to at most
//!   [`MAX_TEXTURE_DIM`] (stills are at most 1024 px), or less when many
//!   textures would pass [`TEXTURE_BUDGET_BYTES`], and given a box-filtered
//!   mip chain.

use super::rig::{self, Angle};
use crate::asset::Asset;
use crate::error::{Error, ErrorCode, Result};
use crate::geom::mat4::{self, Mat4};
use gltf::json::validation::Checked;
use rayon::prelude::*;
use std::collections::HashMap;
use wgpu::util::DeviceExt;

/// MSAA sample count.
pub const SAMPLES: u32 = 4;

/// The device a scene is uploaded to and drawn on: the wgpu device, its
/// queue and the compiled pipelines.
pub struct Device {
    /// The wgpu device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    /// The pipelines compiled for it.
    pub pipelines: Pipelines,
}

/// Largest texture side uploaded; larger ones are reduced (box filter).
pub const MAX_TEXTURE_DIM: u32 = 2048;
/// Largest image side decoded at all; larger ones are drawn with factors only.
pub const MAX_DECODE_DIM: u32 = 8192;
/// Decoder memory limit per image (an 8192x8192 RGBA image and some slack);
/// at most one decode per core is in flight.
pub const MAX_DECODE_BYTES: u64 = 320 << 20;
/// Device bytes all of a scene's textures may take, mip chains included:
/// with many textures each is reduced below [`MAX_TEXTURE_DIM`] to fit.
pub const TEXTURE_BUDGET_BYTES: u64 = 768 << 20;

/// The largest side each of `count` textures may keep within [`TEXTURE_BUDGET_BYTES`].
pub fn texture_dim_for(count: usize) -> u32 {
    let mut dim = MAX_TEXTURE_DIM;
    while dim > 64 && count as u64 * (dim as u64 * dim as u64 * 4 * 4 / 3) > TEXTURE_BUDGET_BYTES {
        dim /= 2;
    }
    dim
}
const FLOATS_PER_VERTEX: usize = 18;
/// Host and device bytes all of a scene's vertex and index buffers may take
/// (each primitive is uploaded once however often it is drawn). A scene over
/// it is not drawn: RND-001 fails with the estimate, rather than the
/// renderer (lavapipe holds buffers in host memory) taking gigabytes.
pub const MESH_BUDGET_BYTES: u64 = 512 << 20;

/// The bytes a scene's vertex and index buffers take on the renderer.
pub fn mesh_bytes(scene: &crate::asset::scene::Scene) -> u64 {
    scene
        .primitives
        .iter()
        .filter(|p| !p.triangles.is_empty())
        .map(|p| (p.positions.len() as u64) * (FLOATS_PER_VERTEX as u64 * 4) + (p.triangles.len() as u64) * 12)
        .fold(0, u64::saturating_add)
}
const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The shader and its pipeline variants.
pub struct Pipelines {
    shader: wgpu::ShaderModule,
    frame_layout: wgpu::BindGroupLayout,
    material_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    variants: std::sync::Mutex<HashMap<(bool, bool, bool), wgpu::RenderPipeline>>,
}

impl Pipelines {
    /// Compiles the shader and makes the layouts.
    pub fn new(device: &wgpu::Device) -> Pipelines {
        let shader = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("studio"),
            source: wgpu::ShaderSource::Wgsl(include_str!("shader.wgsl").into()),
        });
        let vis = wgpu::ShaderStages::VERTEX_FRAGMENT;
        let buffer =
            |binding: u32, visibility: wgpu::ShaderStages, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
                binding,
                visibility,
                ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
                count: None,
            };
        let frame_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("frame"),
            entries: &[
                buffer(0, vis, wgpu::BufferBindingType::Uniform),
                buffer(1, wgpu::ShaderStages::VERTEX, wgpu::BufferBindingType::Storage { read_only: true }),
            ],
        });
        let mut entries = vec![buffer(0, vis, wgpu::BufferBindingType::Uniform)];
        for slot in 0..5u32 {
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: 1 + slot * 2,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Texture {
                    sample_type: wgpu::TextureSampleType::Float { filterable: true },
                    view_dimension: wgpu::TextureViewDimension::D2,
                    multisampled: false,
                },
                count: None,
            });
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: 2 + slot * 2,
                visibility: wgpu::ShaderStages::FRAGMENT,
                ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                count: None,
            });
        }
        let material_layout = device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: Some("material"), entries: &entries });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("studio"),
            bind_group_layouts: &[Some(&frame_layout), Some(&material_layout)],
            immediate_size: 0,
        });
        Pipelines { shader, frame_layout, material_layout, layout, variants: Default::default() }
    }

    fn get(&self, device: &wgpu::Device, blend: bool, double_sided: bool, mirrored: bool) -> wgpu::RenderPipeline {
        let mut cache = self.variants.lock().unwrap_or_else(|p| p.into_inner());
        cache
            .entry((blend, double_sided, mirrored))
            .or_insert_with(|| {
                let attrs = wgpu::vertex_attr_array![
                    0 => Float32x3, 1 => Float32x3, 2 => Float32x4, 3 => Float32x2, 4 => Float32x2, 5 => Float32x4
                ];
                device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                    label: Some("studio"),
                    layout: Some(&self.layout),
                    vertex: wgpu::VertexState {
                        module: &self.shader,
                        entry_point: Some("vs_main"),
                        compilation_options: Default::default(),
                        buffers: &[Some(wgpu::VertexBufferLayout {
                            array_stride: (FLOATS_PER_VERTEX * 4) as u64,
                            step_mode: wgpu::VertexStepMode::Vertex,
                            attributes: &attrs,
                        })],
                    },
                    primitive: wgpu::PrimitiveState {
                        topology: wgpu::PrimitiveTopology::TriangleList,
                        front_face: if mirrored { wgpu::FrontFace::Cw } else { wgpu::FrontFace::Ccw },
                        cull_mode: if double_sided { None } else { Some(wgpu::Face::Back) },
                        ..Default::default()
                    },
                    depth_stencil: Some(wgpu::DepthStencilState {
                        format: DEPTH_FORMAT,
                        depth_write_enabled: Some(!blend),
                        depth_compare: Some(wgpu::CompareFunction::LessEqual),
                        stencil: Default::default(),
                        bias: Default::default(),
                    }),
                    multisample: wgpu::MultisampleState { count: SAMPLES, ..Default::default() },
                    fragment: Some(wgpu::FragmentState {
                        module: &self.shader,
                        entry_point: Some("fs_main"),
                        compilation_options: Default::default(),
                        targets: &[Some(wgpu::ColorTargetState {
                            format: COLOR_FORMAT,
                            blend: blend.then_some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING),
                            write_mask: wgpu::ColorWrites::ALL,
                        })],
                    }),
                    multiview_mask: None,
                    cache: None,
                })
            })
            .clone()
    }
}

/// A view as read back: premultiplied, sRGB-encoded RGBA rows.
pub struct RawView {
    /// Width and height.
    pub size: u32,
    /// `size * size * 4` bytes.
    pub rgba: Vec<u8>,
}

struct Mesh {
    vertices: wgpu::Buffer,
    indices: wgpu::Buffer,
    index_count: u32,
}

struct DrawItem {
    mesh: usize,
    material: usize,
    draw_index: u32,
    mirrored: bool,
    /// Centre of the instance's world box (recentred), for blend sorting.
    centre: [f64; 3],
}

struct MaterialGpu {
    bind_group: wgpu::BindGroup,
    blend: bool,
    double_sided: bool,
}

/// The uploaded scene.
pub struct GpuScene {
    meshes: Vec<Mesh>,
    materials: Vec<MaterialGpu>,
    items: Vec<DrawItem>,
    draw_buffer: wgpu::Buffer,
    radius: f64,
    /// Triangles per view.
    pub triangles: u64,
    /// Draw calls per view.
    pub draw_calls: u64,
    /// What could not be drawn as asked.
    pub notes: Vec<String>,
}

fn render_failed(what: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::RenderFailed, format!("the renderer failed: {what}"))
}

impl GpuScene {
    /// Uploads the asset's default scene.
    pub fn upload(r: &Device, asset: &Asset) -> Result<GpuScene> {
        let scene = &asset.scene;
        let bytes = mesh_bytes(scene);
        if bytes > MESH_BUDGET_BYTES {
            return Err(Error::new(
                ErrorCode::RenderFailed,
                format!(
                    "the scene's meshes would take {} MB of vertex and index buffers, over the renderer's budget of {} MB",
                    bytes >> 20,
                    MESH_BUDGET_BYTES >> 20
                ),
            ));
        }
        let device = &r.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let (centre, radius) = if scene.bounds.is_empty() {
            ([0.0; 3], 1.0)
        } else {
            let (lo, hi) = (scene.bounds.min, scene.bounds.max);
            let c = [(lo[0] + hi[0]) / 2.0, (lo[1] + hi[1]) / 2.0, (lo[2] + hi[2]) / 2.0];
            let d = [(hi[0] - lo[0]) / 2.0, (hi[1] - lo[1]) / 2.0, (hi[2] - lo[2]) / 2.0];
            let r = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            (c, if r.is_finite() && r > 0.0 { r } else { 1.0 })
        };
        let mut notes = Vec::new();
        // Meshes: one vertex and index buffer per primitive with triangles.
        let meshes: Vec<Option<Mesh>> = scene
            .primitives
            .iter()
            .map(|p| {
                if p.triangles.is_empty() {
                    return None;
                }
                let verts = interleave(p);
                let indices: Vec<u32> = p.triangles.iter().flatten().copied().collect();
                Some(Mesh {
                    vertices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("vertices"),
                        contents: bytemuck::cast_slice(&verts),
                        usage: wgpu::BufferUsages::VERTEX,
                    }),
                    indices: device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some("indices"),
                        contents: bytemuck::cast_slice(&indices),
                        usage: wgpu::BufferUsages::INDEX,
                    }),
                    index_count: indices.len() as u32,
                })
            })
            .collect();
        // Materials: the document's, then the default one.
        let textures = Textures::decode(r, asset, &mut notes);
        let mut materials: Vec<MaterialGpu> =
            asset.root.materials.iter().map(|m| material(r, asset, Some(m), &textures)).collect();
        let default_material = materials.len();
        materials.push(material(r, asset, None, &textures));
        // Draws.
        let recentre = mat4::from_trs([-centre[0], -centre[1], -centre[2]], [0.0, 0.0, 0.0, 1.0], [1.0; 3]);
        let mut draw_data: Vec<[[f32; 4]; 8]> = Vec::new();
        let mut items = Vec::new();
        let (mut triangles, mut draw_calls) = (0u64, 0u64);
        for inst in &scene.instances {
            let prim = &scene.primitives[inst.primitive];
            if meshes[inst.primitive].is_none() {
                continue;
            }
            let world = mat4::mul(&recentre, &inst.world);
            let b = prim.bounds.transformed(&world);
            let centre = [(b.min[0] + b.max[0]) / 2.0, (b.min[1] + b.max[1]) / 2.0, (b.min[2] + b.max[2]) / 2.0];
            draw_data.push(draw_matrices(&world));
            let material = prim.material.filter(|&m| m < default_material).unwrap_or(default_material);
            items.push(DrawItem {
                mesh: inst.primitive,
                material,
                draw_index: (draw_data.len() - 1) as u32,
                mirrored: inst.mirrored(),
                centre,
            });
            triangles += prim.triangles.len() as u64;
            draw_calls += 1;
        }
        if draw_data.is_empty() {
            draw_data.push([[0.0; 4]; 8]);
        }
        let draw_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("draws"),
            contents: bytemuck::cast_slice(&draw_data),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let meshes: Vec<Mesh> = meshes
            .into_iter()
            .map(|m| {
                m.unwrap_or_else(|| {
                    // Placeholder for primitives without triangles (never drawn).
                    let empty = |usage| {
                        device.create_buffer(&wgpu::BufferDescriptor {
                            label: None,
                            size: 4,
                            usage,
                            mapped_at_creation: false,
                        })
                    };
                    Mesh {
                        vertices: empty(wgpu::BufferUsages::VERTEX),
                        indices: empty(wgpu::BufferUsages::INDEX),
                        index_count: 0,
                    }
                })
            })
            .collect();
        if let Some(e) = block_on(oom.pop()) {
            return Err(render_failed(format!("out of device memory uploading the scene: {e}")));
        }
        if let Some(e) = block_on(scope.pop()) {
            return Err(render_failed(format!("the device refused the scene: {e}")));
        }
        Ok(GpuScene { meshes, materials, items, draw_buffer, radius, triangles, draw_calls, notes })
    }

    /// Draws one view and reads it back.
    pub fn draw(&self, r: &Device, angle: Angle, size: u32) -> Result<RawView> {
        let device = &r.device;
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let cam = rig::camera(angle, self.radius);
        let mut uniform: Vec<f32> = Vec::with_capacity(48);
        uniform.extend(cam.view_proj.iter().flatten());
        uniform.extend([cam.eye[0], cam.eye[1], cam.eye[2], 1.0]);
        for l in &rig::LIGHTS {
            let d = rig::light_dir_world(&cam, l);
            uniform.extend([d[0], d[1], d[2], 0.0]);
        }
        for l in &rig::LIGHTS {
            uniform.extend([l.color[0], l.color[1], l.color[2], 0.0]);
        }
        uniform.extend([rig::AMBIENT_SKY[0], rig::AMBIENT_SKY[1], rig::AMBIENT_SKY[2], 0.0]);
        uniform.extend([rig::AMBIENT_GROUND[0], rig::AMBIENT_GROUND[1], rig::AMBIENT_GROUND[2], 0.0]);
        let camera = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("camera"),
            contents: bytemuck::cast_slice(&uniform),
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let frame = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("frame"),
            layout: &r.pipelines.frame_layout,
            entries: &[
                wgpu::BindGroupEntry { binding: 0, resource: camera.as_entire_binding() },
                wgpu::BindGroupEntry { binding: 1, resource: self.draw_buffer.as_entire_binding() },
            ],
        });
        let extent = wgpu::Extent3d { width: size, height: size, depth_or_array_layers: 1 };
        let target = |samples: u32, format: wgpu::TextureFormat, usage: wgpu::TextureUsages| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: None,
                size: extent,
                mip_level_count: 1,
                sample_count: samples,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let msaa = target(SAMPLES, COLOR_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT);
        let resolved = target(1, COLOR_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC);
        let depth = target(SAMPLES, DEPTH_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT);
        let msaa_view = msaa.create_view(&Default::default());
        let resolved_view = resolved.create_view(&Default::default());
        let depth_view = depth.create_view(&Default::default());

        // Opaque and masked first (in scene order), then blended back to front.
        let eye = [cam.eye[0] as f64, cam.eye[1] as f64, cam.eye[2] as f64];
        let dist2 = |c: &[f64; 3]| (c[0] - eye[0]).powi(2) + (c[1] - eye[1]).powi(2) + (c[2] - eye[2]).powi(2);
        let mut order: Vec<&DrawItem> = self.items.iter().filter(|i| !self.materials[i.material].blend).collect();
        let mut blended: Vec<&DrawItem> = self.items.iter().filter(|i| self.materials[i.material].blend).collect();
        blended.sort_by(|a, b| dist2(&b.centre).total_cmp(&dist2(&a.centre)).then(a.draw_index.cmp(&b.draw_index)));
        order.extend(blended);

        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("view"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &msaa_view,
                    depth_slice: None,
                    resolve_target: Some(&resolved_view),
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                        store: wgpu::StoreOp::Discard,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &depth_view,
                    depth_ops: Some(wgpu::Operations { load: wgpu::LoadOp::Clear(1.0), store: wgpu::StoreOp::Discard }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(0, &frame, &[]);
            let mut current: Option<(bool, bool, bool)> = None;
            for item in order {
                let m = &self.materials[item.material];
                let key = (m.blend, m.double_sided, item.mirrored);
                if current != Some(key) {
                    pass.set_pipeline(&r.pipelines.get(device, key.0, key.1, key.2));
                    current = Some(key);
                }
                let mesh = &self.meshes[item.mesh];
                pass.set_bind_group(1, &m.bind_group, &[]);
                pass.set_vertex_buffer(0, mesh.vertices.slice(..));
                pass.set_index_buffer(mesh.indices.slice(..), wgpu::IndexFormat::Uint32);
                pass.draw_indexed(0..mesh.index_count, 0, item.draw_index..item.draw_index + 1);
            }
        }
        let row = (size * 4).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT);
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: row as u64 * size as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        encoder.copy_texture_to_buffer(
            wgpu::TexelCopyTextureInfo {
                texture: &resolved,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyBufferInfo {
                buffer: &readback,
                layout: wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(row), rows_per_image: Some(size) },
            },
            extent,
        );
        r.queue.submit([encoder.finish()]);
        let (tx, rx) = std::sync::mpsc::channel();
        readback.slice(..).map_async(wgpu::MapMode::Read, move |res| {
            let _ = tx.send(res);
        });
        device.poll(wgpu::PollType::wait_indefinitely()).map_err(render_failed)?;
        if let Some(e) = block_on(oom.pop()) {
            return Err(render_failed(format!("out of device memory drawing a view: {e}")));
        }
        if let Some(e) = block_on(scope.pop()) {
            return Err(render_failed(format!("the device refused a view: {e}")));
        }
        rx.recv().map_err(render_failed)?.map_err(render_failed)?;
        let mapped = readback.slice(..).get_mapped_range().map_err(render_failed)?;
        let mut rgba = Vec::with_capacity((size * size * 4) as usize);
        for y in 0..size as usize {
            let start = y * row as usize;
            rgba.extend_from_slice(&mapped[start..start + size as usize * 4]);
        }
        drop(mapped);
        readback.unmap();
        Ok(RawView { size, rgba })
    }
}

/// Model matrix (recentred, f32) and normal matrix (the cofactor of the
/// upper 3x3, signed so that mirrors keep normals outward), column-major.
fn draw_matrices(world: &Mat4) -> [[f32; 4]; 8] {
    let m = |r: usize, c: usize| world[c * 4 + r];
    let mut out = [[0.0f32; 4]; 8];
    for (c, col) in out.iter_mut().take(4).enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = m(r, c) as f32;
        }
    }
    // Cofactor matrix of the upper 3x3: cof(M) = det(M) * M^-T.
    let cof = |r: usize, c: usize| {
        let (r1, r2) = ((r + 1) % 3, (r + 2) % 3);
        let (c1, c2) = ((c + 1) % 3, (c + 2) % 3);
        m(r1, c1) * m(r2, c2) - m(r1, c2) * m(r2, c1)
    };
    let det = mat4::det3(world);
    let sign = if det < 0.0 { -1.0 } else { 1.0 };
    for (c, col) in out.iter_mut().skip(4).take(3).enumerate() {
        for (r, v) in col.iter_mut().take(3).enumerate() {
            *v = (cof(r, c) * sign) as f32;
        }
    }
    out[7][3] = 1.0;
    out
}

fn interleave(p: &crate::asset::scene::Primitive) -> Vec<f32> {
    let n = p.positions.len();
    let uv = |set: usize| p.uvs.get(set).and_then(|u| u.as_ref());
    let (uv0, uv1) = (uv(0), uv(1));
    let mut out = Vec::with_capacity(n * FLOATS_PER_VERTEX);
    for i in 0..n {
        out.extend(p.positions[i]);
        out.extend(p.normals.as_ref().map_or([0.0; 3], |v| v[i]));
        out.extend(p.tangents.as_ref().map_or([0.0; 4], |v| v[i]));
        out.extend(uv0.and_then(|u| u.get(i)).copied().unwrap_or([0.0; 2]));
        out.extend(uv1.and_then(|u| u.get(i)).copied().unwrap_or([0.0; 2]));
        out.extend(p.colors.as_ref().map_or([1.0; 4], |v| v[i]));
    }
    out
}

/// Decoded, uploaded textures by (image, sRGB), and samplers by glTF sampler.
struct Textures {
    views: HashMap<(usize, bool), wgpu::TextureView>,
    samplers: Vec<wgpu::Sampler>,
    default_sampler: wgpu::Sampler,
    white: wgpu::TextureView,
    flat_normal: wgpu::TextureView,
}

/// A texture reference in a material: (glTF texture index, UV set, transform rows).
struct Slot {
    texture: Option<usize>,
    rows: [[f32; 4]; 2],
}

impl Textures {
    fn decode(r: &Device, asset: &Asset, notes: &mut Vec<String>) -> Textures {
        // Device memory is bounded by the budget; host memory by one full-size
        // decode per core plus the reduced images.
        let device = &r.device;
        // Which images are needed, and in which colour space.
        let mut wanted: Vec<(usize, bool)> = Vec::new();
        for m in &asset.root.materials {
            for (tex, srgb) in crate::asset::material::drawn_slots(m) {
                if let Some(img) = crate::asset::material::decodable_image(&asset.root, tex)
                    && !wanted.contains(&(img, srgb))
                {
                    wanted.push((img, srgb));
                }
            }
        }
        let max_dim = texture_dim_for(wanted.len());
        let side = |img: usize| {
            asset.images.get(img).and_then(|r| r.header.as_ref().ok()).map_or(0, |h| h.width.max(h.height))
        };
        // Reduced because of the budget: larger than its share, which is below the usual cap.
        let reduced = wanted.iter().filter(|(img, _)| max_dim < MAX_TEXTURE_DIM && side(*img) > max_dim).count();
        if reduced > 0 {
            notes.push(format!(
                "{} textures drawn at {max_dim} px a side at most, to keep {} textures within the renderer's texture budget",
                reduced,
                wanted.len()
            ));
        }
        let decoded: Vec<((usize, bool), std::result::Result<image::RgbaImage, String>)> =
            wanted.par_iter().map(|&(img, srgb)| ((img, srgb), decode_image(asset, img, max_dim))).collect();
        let mut views = HashMap::new();
        let mut failed = std::collections::BTreeSet::new();
        for ((img, srgb), result) in decoded {
            match result {
                Ok(pixels) => {
                    views.insert((img, srgb), upload_texture(r, &pixels, srgb));
                }
                Err(why) => {
                    if failed.insert(img) {
                        notes.push(format!("/images/{img}: {why}; drawn with its material's factors"));
                    }
                }
            }
        }
        let samplers = asset.root.samplers.iter().map(|s| sampler(device, Some(s))).collect();
        let one = |rgba: [u8; 4]| upload_texture(r, &image::RgbaImage::from_pixel(1, 1, image::Rgba(rgba)), false);
        Textures {
            views,
            samplers,
            default_sampler: sampler(device, None),
            white: one([255; 4]),
            flat_normal: one([128, 128, 255, 255]),
        }
    }
}

fn decode_image(asset: &Asset, img: usize, max_dim: u32) -> std::result::Result<image::RgbaImage, String> {
    let bytes = asset.image_data.get(img).and_then(|b| b.as_deref()).ok_or("the image could not be loaded")?;
    if bytes.starts_with(b"\xABKTX 20\xBB") {
        return Err("KTX2/Basis Universal textures are not decoded by the renderer".into());
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("the image cannot be read: {e}"))?;
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_DECODE_DIM);
    limits.max_image_height = Some(MAX_DECODE_DIM);
    limits.max_alloc = Some(MAX_DECODE_BYTES);
    reader.limits(limits);
    let decoded = reader.decode().map_err(|e| format!("the image cannot be decoded: {e}"))?;
    let (w, h) = (decoded.width(), decoded.height());
    let scale = (max_dim as f64 / w.max(h) as f64).min(1.0);
    let rgba = if scale < 1.0 {
        let nw = ((w as f64 * scale).round() as u32).max(1);
        let nh = ((h as f64 * scale).round() as u32).max(1);
        decoded.thumbnail_exact(nw, nh).into_rgba8()
    } else {
        decoded.into_rgba8()
    };
    Ok(rgba)
}

/// Uploads an image with a box-filtered mip chain.
fn upload_texture(r: &Device, pixels: &image::RgbaImage, srgb: bool) -> wgpu::TextureView {
    let (w, h) = pixels.dimensions();
    let levels = 32 - w.max(h).leading_zeros();
    let texture = r.device.create_texture(&wgpu::TextureDescriptor {
        label: Some("texture"),
        size: wgpu::Extent3d { width: w, height: h, depth_or_array_layers: 1 },
        mip_level_count: levels,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format: if srgb { wgpu::TextureFormat::Rgba8UnormSrgb } else { wgpu::TextureFormat::Rgba8Unorm },
        usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
        view_formats: &[],
    });
    let mut level = std::borrow::Cow::Borrowed(pixels);
    for mip in 0..levels {
        let (lw, lh) = level.dimensions();
        r.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &texture,
                mip_level: mip,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            level.as_raw(),
            wgpu::TexelCopyBufferLayout { offset: 0, bytes_per_row: Some(lw * 4), rows_per_image: Some(lh) },
            wgpu::Extent3d { width: lw, height: lh, depth_or_array_layers: 1 },
        );
        if mip + 1 < levels {
            level = std::borrow::Cow::Owned(half(&level));
        }
    }
    texture.create_view(&Default::default())
}

/// The next mip level: each texel the mean of (up to) 2x2 texels.
fn half(img: &image::RgbaImage) -> image::RgbaImage {
    let (w, h) = img.dimensions();
    let (nw, nh) = ((w / 2).max(1), (h / 2).max(1));
    image::RgbaImage::from_fn(nw, nh, |x, y| {
        let (x0, y0) = ((x * 2).min(w - 1), (y * 2).min(h - 1));
        let (x1, y1) = ((x * 2 + 1).min(w - 1), (y * 2 + 1).min(h - 1));
        let px = [img.get_pixel(x0, y0), img.get_pixel(x1, y0), img.get_pixel(x0, y1), img.get_pixel(x1, y1)];
        image::Rgba(std::array::from_fn(|c| ((px.iter().map(|p| p[c] as u32).sum::<u32>() + 2) / 4) as u8))
    })
}

fn sampler(device: &wgpu::Device, s: Option<&gltf::json::texture::Sampler>) -> wgpu::Sampler {
    use gltf::json::texture::{MagFilter, MinFilter, WrappingMode};
    let wrap = |w: Option<&Checked<WrappingMode>>| match w {
        Some(Checked::Valid(WrappingMode::ClampToEdge)) => wgpu::AddressMode::ClampToEdge,
        Some(Checked::Valid(WrappingMode::MirroredRepeat)) => wgpu::AddressMode::MirrorRepeat,
        _ => wgpu::AddressMode::Repeat,
    };
    let mag = match s.and_then(|s| s.mag_filter.as_ref()) {
        Some(Checked::Valid(MagFilter::Nearest)) => wgpu::FilterMode::Nearest,
        _ => wgpu::FilterMode::Linear,
    };
    let (min, mip) = match s.and_then(|s| s.min_filter.as_ref()) {
        Some(Checked::Valid(MinFilter::Nearest)) | Some(Checked::Valid(MinFilter::NearestMipmapNearest)) => {
            (wgpu::FilterMode::Nearest, wgpu::MipmapFilterMode::Nearest)
        }
        Some(Checked::Valid(MinFilter::NearestMipmapLinear)) => {
            (wgpu::FilterMode::Nearest, wgpu::MipmapFilterMode::Linear)
        }
        Some(Checked::Valid(MinFilter::LinearMipmapNearest)) => {
            (wgpu::FilterMode::Linear, wgpu::MipmapFilterMode::Nearest)
        }
        _ => (wgpu::FilterMode::Linear, wgpu::MipmapFilterMode::Linear),
    };
    device.create_sampler(&wgpu::SamplerDescriptor {
        label: Some("sampler"),
        address_mode_u: wrap(s.map(|s| &s.wrap_s)),
        address_mode_v: wrap(s.map(|s| &s.wrap_t)),
        address_mode_w: wgpu::AddressMode::Repeat,
        mag_filter: mag,
        min_filter: min,
        mipmap_filter: mip,
        ..Default::default()
    })
}

/// KHR_texture_transform as two rows of the UV affine map, with the UV set
/// (the transform's `texCoord` overrides the slot's).
fn slot_rows(tex_coord: u32, transform: Option<&serde_json::Value>) -> [[f32; 4]; 2] {
    let num = |v: Option<&serde_json::Value>, i: usize, d: f64| {
        v.and_then(|a| a.get(i)).and_then(|x| x.as_f64()).unwrap_or(d) as f32
    };
    let (mut ox, mut oy, mut rot, mut sx, mut sy, mut set) = (0.0, 0.0, 0.0, 1.0, 1.0, tex_coord);
    if let Some(t) = transform {
        ox = num(t.get("offset"), 0, 0.0);
        oy = num(t.get("offset"), 1, 0.0);
        rot = t.get("rotation").and_then(|r| r.as_f64()).unwrap_or(0.0) as f32;
        sx = num(t.get("scale"), 0, 1.0);
        sy = num(t.get("scale"), 1, 1.0);
        if let Some(tc) = t.get("texCoord").and_then(|c| c.as_u64()) {
            set = tc as u32;
        }
    }
    // uv' = T * R * S * uv, with R = [[cos, sin], [-sin, cos]] (the extension's convention).
    let (c, s) = (rot.cos(), rot.sin());
    let set = if set == 1 { 1.0 } else { 0.0 };
    [[c * sx, s * sy, ox, set], [-s * sx, c * sy, oy, 0.0]]
}

fn material(r: &Device, asset: &Asset, m: Option<&gltf::json::Material>, textures: &Textures) -> MaterialGpu {
    let device = &r.device;
    let info_slot = |info: Option<&gltf::json::texture::Info>| -> Slot {
        match info {
            Some(i) => {
                let xf = i.extensions.as_ref().and_then(|e| e.texture_transform.as_ref()).map(|t| {
                    serde_json::json!({
                        "offset": t.offset.0, "rotation": t.rotation.0, "scale": t.scale.0, "texCoord": t.tex_coord
                    })
                });
                Slot { texture: Some(i.index.value()), rows: slot_rows(i.tex_coord, xf.as_ref()) }
            }
            None => Slot { texture: None, rows: slot_rows(0, None) },
        }
    };
    let (base_factor, emissive, params, alpha, slots, blend, double_sided) = match m {
        Some(m) => {
            let pbr = &m.pbr_metallic_roughness;
            let normal = m.normal_texture.as_ref().map(|t| Slot {
                texture: Some(t.index.value()),
                rows: slot_rows(t.tex_coord, t.extensions.as_ref().and_then(|e| e.others.get("KHR_texture_transform"))),
            });
            let occlusion = m.occlusion_texture.as_ref().map(|t| Slot {
                texture: Some(t.index.value()),
                rows: slot_rows(t.tex_coord, t.extensions.as_ref().and_then(|e| e.others.get("KHR_texture_transform"))),
            });
            let mode = match m.alpha_mode {
                Checked::Valid(gltf::json::material::AlphaMode::Mask) => 1.0,
                Checked::Valid(gltf::json::material::AlphaMode::Blend) => 2.0,
                _ => 0.0,
            };
            let unlit = m.extensions.as_ref().is_some_and(|e| e.unlit.is_some());
            let has_normal_map = normal.as_ref().and_then(|s| s.texture).is_some();
            let e = m.emissive_factor.0;
            (
                pbr.base_color_factor.0,
                [e[0], e[1], e[2], 0.0],
                [
                    pbr.metallic_factor.0,
                    pbr.roughness_factor.0,
                    m.normal_texture.as_ref().map_or(1.0, |t| t.scale),
                    m.occlusion_texture.as_ref().map_or(1.0, |t| t.strength.0),
                ],
                [
                    mode,
                    m.alpha_cutoff.map_or(0.5, |c| c.0),
                    if unlit { 1.0 } else { 0.0 },
                    if has_normal_map { 1.0 } else { 0.0 },
                ],
                [
                    info_slot(pbr.base_color_texture.as_ref()),
                    info_slot(pbr.metallic_roughness_texture.as_ref()),
                    normal.unwrap_or(Slot { texture: None, rows: slot_rows(0, None) }),
                    occlusion.unwrap_or(Slot { texture: None, rows: slot_rows(0, None) }),
                    info_slot(m.emissive_texture.as_ref()),
                ],
                mode == 2.0,
                m.double_sided,
            )
        }
        // No material: a light grey dielectric, as viewers show such meshes
        // (glTF's default factors, white fully-rough metal, read as near black
        // under a studio rig without an environment map).
        None => (
            [0.8, 0.8, 0.8, 1.0],
            [0.0; 4],
            [0.0, 0.6, 1.0, 1.0],
            [0.0, 0.5, 0.0, 0.0],
            std::array::from_fn(|_| Slot { texture: None, rows: slot_rows(0, None) }),
            false,
            false,
        ),
    };
    let mut uniform: Vec<f32> = Vec::with_capacity(56);
    uniform.extend(base_factor);
    uniform.extend(emissive);
    uniform.extend(params);
    uniform.extend(alpha);
    for s in &slots {
        uniform.extend(s.rows[0]);
        uniform.extend(s.rows[1]);
    }
    let buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("material"),
        contents: bytemuck::cast_slice(&uniform),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let srgb_of = [true, false, false, false, true];
    let mut views: Vec<&wgpu::TextureView> = Vec::new();
    let mut samps: Vec<&wgpu::Sampler> = Vec::new();
    for (k, s) in slots.iter().enumerate() {
        let fallback = if k == 2 { &textures.flat_normal } else { &textures.white };
        let found = s.texture.and_then(|t| {
            let img = crate::asset::material::decodable_image(&asset.root, t)?;
            let view = textures.views.get(&(img, srgb_of[k]))?;
            let sampler = asset.root.textures[t]
                .sampler
                .map(|i| i.value())
                .and_then(|i| textures.samplers.get(i))
                .unwrap_or(&textures.default_sampler);
            Some((view, sampler))
        });
        let (v, smp) = found.unwrap_or((fallback, &textures.default_sampler));
        views.push(v);
        samps.push(smp);
    }
    let mut entries = vec![wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }];
    for k in 0..5 {
        entries.push(wgpu::BindGroupEntry {
            binding: 1 + 2 * k as u32,
            resource: wgpu::BindingResource::TextureView(views[k]),
        });
        entries.push(wgpu::BindGroupEntry {
            binding: 2 + 2 * k as u32,
            resource: wgpu::BindingResource::Sampler(samps[k]),
        });
    }
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("material"),
        layout: &r.pipelines.material_layout,
        entries: &entries,
    });
    MaterialGpu { bind_group, blend, double_sided }
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
    fn many_textures_share_the_budget() {
        assert_eq!(texture_dim_for(1), MAX_TEXTURE_DIM);
        assert_eq!(texture_dim_for(30), MAX_TEXTURE_DIM);
        for n in [40, 200, 1000, 100_000] {
            let d = texture_dim_for(n) as u64;
            assert!(d >= 64 && d < MAX_TEXTURE_DIM as u64, "{n}: {d}");
            if d > 64 {
                assert!(n as u64 * d * d * 4 * 4 / 3 <= TEXTURE_BUDGET_BYTES, "{n}: {d}");
            }
        }
    }

    #[test]
    fn mips_halve_to_one_texel() {
        let img = image::RgbaImage::from_pixel(5, 3, image::Rgba([10, 20, 30, 255]));
        let h = half(&img);
        assert_eq!(h.dimensions(), (2, 1));
        assert_eq!(h.get_pixel(0, 0).0, [10, 20, 30, 255]);
        assert_eq!(half(&half(&h)).dimensions(), (1, 1));
    }
}
