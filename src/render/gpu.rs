//! The scene on the device: vertex, index and draw buffers, uploaded once
//! per request ([`GpuScene::upload`]), and drawing one view
//! ([`GpuScene::draw`]).
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
//! - Materials and textures: [`super::textures`]; the device and its
//!   pipelines: [`super::device`].

use super::device::{COLOR_FORMAT, DEPTH_FORMAT, Device, FLOATS_PER_VERTEX, SAMPLES, block_on};
use super::rig::{self, Angle};
use super::textures::{MaterialGpu, Textures, material};
use crate::asset::Asset;
use crate::error::{Error, ErrorCode, Result};
use crate::geom::mat4::{self, Mat4};
use wgpu::util::DeviceExt;

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
