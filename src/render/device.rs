//! The device a scene is drawn on: the wgpu device and queue, the studio
//! shader and its pipeline variants, and the formats every view uses.
//!
//! - Pipelines are keyed by (blend, double-sided, mirrored): blending
//!   pipelines do not write depth; mirrored instances (negative determinant)
//!   wind clockwise; single-sided ones cull back faces.
//! - Vertices are interleaved (position, normal, tangent, two UV sets,
//!   colour: `FLOATS_PER_VERTEX` floats, 72 bytes).

use std::collections::HashMap;

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

/// Floats per interleaved vertex.
pub(super) const FLOATS_PER_VERTEX: usize = 18;
/// The colour target of every view.
pub(super) const COLOR_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
/// The depth target of every view.
pub(super) const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The shader and its pipeline variants.
pub struct Pipelines {
    shader: wgpu::ShaderModule,
    pub(super) frame_layout: wgpu::BindGroupLayout,
    pub(super) material_layout: wgpu::BindGroupLayout,
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

    pub(super) fn get(
        &self,
        device: &wgpu::Device,
        blend: bool,
        double_sided: bool,
        mirrored: bool,
    ) -> wgpu::RenderPipeline {
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
