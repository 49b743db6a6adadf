//! Textures, samplers and materials on the device: the images a scene's
//! materials sample, decoded and uploaded (`Textures`), glTF samplers as
//! wgpu samplers, and each material's uniform and bind group (`material`).
//!
//! Textures are decoded with `image` under limits ([`MAX_DECODE_DIM`],
//! [`MAX_DECODE_BYTES`]), in parallel, reduced to at most
//! [`MAX_TEXTURE_DIM`] (stills are at most 1024 px), or less when many
//! textures would pass [`TEXTURE_BUDGET_BYTES`], and given a box-filtered
//! mip chain. An image that cannot be decoded is drawn with its material's
//! factors, with a note.

use super::device::Device;
use crate::asset::Asset;
use gltf::json::validation::Checked;
use rayon::prelude::*;
use std::collections::HashMap;
use wgpu::util::DeviceExt;

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

pub(super) struct MaterialGpu {
    pub(super) bind_group: wgpu::BindGroup,
    pub(super) blend: bool,
    pub(super) double_sided: bool,
}

/// Decoded, uploaded textures by (image, sRGB), and samplers by glTF sampler.
pub(super) struct Textures {
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
    pub(super) fn decode(r: &Device, asset: &Asset, notes: &mut Vec<String>) -> Textures {
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

pub(super) fn material(
    r: &Device,
    asset: &Asset,
    m: Option<&gltf::json::Material>,
    textures: &Textures,
) -> MaterialGpu {
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
