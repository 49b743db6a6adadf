//! MAT: texture resolution, GPU texture memory and material count; power-of-two
//! sides, the PBR base-colour range (read from decoded texels), and texture
//! compression with complete KTX2 mip chains.

use super::{CheckDef, Family, Needs};
use super::{CheckOutput, Comparison, Ctx, MAX_LOCATIONS, Obj, bytes_h, count, measured, over, short};
use crate::asset::ImageRecord;
use crate::asset::material::{texture_image, texture_slots};
use crate::asset::texture::{ImageFormat, ImageHeader, RowLayout, decode_texels, png_rows};
use crate::profile::Param;
use crate::report::Severity;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const CATEGORY: &str = "material";

/// The MAT family: its checks in ID order.
pub static FAMILY: Family = Family {
    prefix: "MAT",
    category: CATEGORY,
    label: "Materials",
    blurb: "Texture size and memory, materials, power-of-two sides, base-colour range, compression and mipmaps",
    checks: &[TEXTURE_RESOLUTION, TEXTURE_MEMORY, MATERIAL_COUNT, POWER_OF_TWO, BASE_COLOR_RANGE, COMPRESSION_MIPS],
};

/// Materials used by drawn primitives (`None` = the default material).
fn used_materials(cx: &Ctx<'_>) -> BTreeSet<Option<usize>> {
    let scene = &cx.asset.scene;
    scene.instances.iter().map(|i| scene.primitives[i.primitive].material).collect()
}

/// Images used by drawn materials, each once, in index order.
fn used_images<'a>(cx: &'a Ctx<'_>) -> Vec<&'a ImageRecord> {
    let root = &cx.asset.root;
    let mut images = BTreeSet::new();
    for m in used_materials(cx).into_iter().flatten() {
        let Some(mat) = root.materials.get(m) else { continue };
        for (tex, _) in texture_slots(mat) {
            if let Some(img) = root.textures.get(tex).and_then(texture_image) {
                images.insert(img);
            }
        }
    }
    images.into_iter().filter_map(|i| cx.asset.images.get(i)).collect()
}

fn readable<'a>(images: &[&'a ImageRecord]) -> Vec<(&'a ImageRecord, &'a ImageHeader)> {
    images.iter().filter_map(|r| r.header.as_ref().ok().map(|h| (*r, h))).collect()
}

/// Budget: Largest texture side.
pub const MAX_TEXTURE_DIM: Param =
    Param { key: "max_texture_dim", unit: "px", doc: "Largest texture side", overridable: true, integer: true };

/// MAT-001: its definition.
pub const TEXTURE_RESOLUTION: CheckDef = CheckDef {
    id: "MAT-001",
    name: "Texture resolution",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_TEXTURE_DIM],
    what: "Reads the header (never the pixels) of every image that a material drawn in the default scene uses, preferring a KTX2 (KHR_texture_basisu) or WebP (EXT_texture_webp) source over the fallback, and compares the longest side with the budget.",
    why: "Textures beyond a platform's maximum are downscaled or refused at load time, and large maps dominate download size and GPU memory.",
    fix: "Resize the named images to the budget (power-of-two sides are kindest to mipmapping), or choose a profile meant for the target hardware.",
    measured: &[
        ("images", "images measured (used by drawn materials, each once)"),
        ("max_dimension_px", "the longest side of any measured image, in pixels"),
        ("over_budget", "images with a side over max_texture_dim"),
        ("non_power_of_two", "images with a side that is not a power of two"),
        ("unreadable", "used images whose header could not be read (missing or not an image)"),
        ("textures", "per image (at most 100, largest first): pointer, width, height, format"),
    ],
    threshold: &[("max_texture_dim", "largest allowed side in pixels")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: Some(("max_dimension_px", "max_texture_dim")),
    run: texture_resolution,
};

/// MAT-001.
pub fn texture_resolution(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.width.max(h.height)), r.index));
    let max = cx.profile.get(&MAX_TEXTURE_DIM);
    let largest = ok.first();
    let max_dim = largest.map_or(0, |(_, h)| h.width.max(h.height));
    let over_budget = ok.iter().filter(|(_, h)| h.width.max(h.height) as f64 > max).count();
    let npot = ok.iter().filter(|(_, h)| !h.width.is_power_of_two() || !h.height.is_power_of_two()).count();
    let list: Vec<Value> = ok
        .iter()
        .take(MAX_LOCATIONS)
        .map(
            |(r, h)| json!({"pointer": r.pointer(), "width": h.width, "height": h.height, "format": h.format.as_str()}),
        )
        .collect();
    let message = match largest {
        None if images.is_empty() => "no drawn material uses a texture".to_string(),
        None => format!("none of the {} used images has a readable header", images.len()),
        Some((r, h)) if over_budget > 0 => format!(
            "{over_budget} of {} images exceed {} px; largest {}x{} ({})",
            ok.len(),
            max as u64,
            h.width,
            h.height,
            r.pointer()
        ),
        Some((r, h)) => format!("largest texture {}x{} ({}), within {} px", h.width, h.height, r.pointer(), max as u64),
    };
    measured(
        Obj::new()
            .int("images", images.len() as u64)
            .int("max_dimension_px", max_dim as u64)
            .int("over_budget", over_budget as u64)
            .int("non_power_of_two", npot as u64)
            .int("unreadable", (images.len() - ok.len()) as u64)
            .val("textures", Value::Array(list)),
        Obj::new().param(cx.profile, &MAX_TEXTURE_DIM),
        over(max_dim as f64, max),
        message,
    )
}

/// Budget: Estimated GPU texture memory.
pub const MAX_TEXTURE_MEM: Param = Param {
    key: "max_texture_mem",
    unit: "bytes",
    doc: "Estimated GPU texture memory",
    overridable: true,
    integer: true,
};

/// MAT-002: its definition.
pub const TEXTURE_MEMORY: CheckDef = CheckDef {
    id: "MAT-002",
    name: "Estimated GPU texture memory",
    category: CATEGORY,
    severity: Severity::Error,
    params: &[&MAX_TEXTURE_MEM],
    what: "Sums the GPU memory of the measured images as glTF-Transform estimates it: PNG, JPEG and WebP as RGBA8 with a full mip chain (a 2048x2048 map is 22,369,620 bytes); KTX2 from its levels (UASTC and GPU formats from each level's uncompressed size, ETC1S as 8 bytes per 4x4 block, 16 with alpha).",
    why: "Texture memory is what runs mobile browsers and headsets out of memory; file size hides it, since a 300 KB JPEG still costs width x height x 4 bytes on the GPU.",
    fix: "Downscale the largest maps, merge small ones into an atlas, or ship KTX2 (Basis Universal) textures, which stay compressed on the GPU.",
    measured: &[
        ("gpu_bytes", "estimated GPU memory of all measured images, in bytes"),
        ("images", "images measured"),
        ("by_image", "per image (at most 100, largest first): pointer, gpu_bytes"),
    ],
    threshold: &[("max_texture_mem", "budget in bytes")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: Some(("gpu_bytes", "max_texture_mem")),
    run: texture_memory,
};

/// MAT-002.
pub fn texture_memory(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let mut ok = readable(&images);
    ok.sort_by_key(|(r, h)| (std::cmp::Reverse(h.gpu_bytes), r.index));
    let total: u64 = ok.iter().map(|(_, h)| h.gpu_bytes).fold(0, u64::saturating_add);
    let max = cx.profile.get(&MAX_TEXTURE_MEM);
    let by_image: Vec<Value> =
        ok.iter().take(MAX_LOCATIONS).map(|(r, h)| json!({"pointer": r.pointer(), "gpu_bytes": h.gpu_bytes})).collect();
    let verdict = if total as f64 > max { "over" } else { "within" };
    measured(
        Obj::new().int("gpu_bytes", total).int("images", ok.len() as u64).val("by_image", Value::Array(by_image)),
        Obj::new().param(cx.profile, &MAX_TEXTURE_MEM),
        over(total as f64, max),
        format!(
            "{} of GPU texture memory for {}, {verdict} the budget of {} ({})",
            bytes_h(total),
            count(ok.len() as u64, "image", "images"),
            bytes_h(max as u64),
            cx.profile.name
        ),
    )
}

/// Budget: Materials drawn.
pub const MAX_MATERIALS: Param =
    Param { key: "max_materials", unit: "materials", doc: "Materials drawn", overridable: true, integer: true };

/// MAT-004: its definition.
pub const MATERIAL_COUNT: CheckDef = CheckDef {
    id: "MAT-004",
    name: "Material count",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MAX_MATERIALS],
    what: "Counts the distinct materials used by primitives drawn in the default scene; primitives without a material use the glTF default material, which counts as one.",
    why: "Every material is at least one shader state change and usually one more draw call; real-time budgets cap them.",
    fix: "Merge materials that differ only in texture into one material over a texture atlas; remove near-duplicate materials.",
    measured: &[
        ("materials", "distinct materials drawn (the default material counts once)"),
        ("materials_defined", "length of the document's materials array"),
        ("default_material_used", "whether some primitive has no material"),
    ],
    threshold: &[("max_materials", "budget")],
    needs: Needs { geometry: false, textures: false, validator: false, renderer: false },
    gauge: Some(("materials", "max_materials")),
    run: material_count,
};

/// MAT-004.
pub fn material_count(cx: &Ctx<'_>) -> CheckOutput {
    let used = used_materials(cx);
    let n = used.len() as u64;
    let default_used = used.contains(&None);
    let max = cx.profile.get(&MAX_MATERIALS);
    let verdict = if n as f64 > max { "over" } else { "within" };
    measured(
        Obj::new()
            .int("materials", n)
            .int("materials_defined", cx.asset.root.materials.len() as u64)
            .bool("default_material_used", default_used),
        Obj::new().param(cx.profile, &MAX_MATERIALS),
        over(n as f64, max),
        format!(
            "{} drawn, {verdict} the budget of {} ({})",
            count(n, "material", "materials"),
            max as u64,
            cx.profile.name
        ),
    )
}

/// MAT-005: its definition.
pub const POWER_OF_TWO: CheckDef = CheckDef {
    id: "MAT-005",
    name: "Texture dimensions a power of two",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[],
    what: "Reads the header of every image that a material drawn in the default scene uses (as MAT-001: the KTX2 or WebP source when the texture gives one) and counts those whose width or height is not a power of two.",
    why: "WebGL 1 and OpenGL ES 2.0 devices cannot mipmap a non-power-of-two texture or repeat it (REPEAT, MIRRORED_REPEAT): viewers resize it at load time (three.js, Babylon.js and CesiumJS do) or draw it blurry or black; on every GPU, mip chains of odd sizes round and filter unevenly. The glTF-Asset-Auditor requires power-of-two sides by default.",
    fix: "Resize the named images to power-of-two sides (512, 1024, 2048; they need not be square), padding the layout rather than stretching it where the aspect ratio matters.",
    measured: &[
        ("non_power_of_two", "images with a side that is not a power of two"),
        ("textures", "images measured (used by drawn materials, each once, with a readable header)"),
        ("images", "per non-power-of-two image (at most 100, in index order): pointer, width, height"),
    ],
    threshold: &[("max_non_power_of_two", "always 0")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: None,
    run: power_of_two,
};

/// MAT-005.
pub fn power_of_two(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let ok = readable(&images);
    if ok.is_empty() {
        return CheckOutput::Skipped(if images.is_empty() {
            "no drawn material uses a texture".into()
        } else {
            format!("none of the {} used images has a readable header", images.len())
        });
    }
    let npot: Vec<_> = ok.iter().filter(|(_, h)| !h.width.is_power_of_two() || !h.height.is_power_of_two()).collect();
    let list: Vec<Value> = npot
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(r, h)| json!({"pointer": r.pointer(), "width": h.width, "height": h.height}))
        .collect();
    let message = match npot.first() {
        None => format!("all {} have power-of-two sides", count(ok.len() as u64, "texture", "textures")),
        Some((r, h)) => format!(
            "{} of {} has a side that is not a power of two; first: {} at {}x{}",
            count(npot.len() as u64, "texture", "textures"),
            ok.len(),
            r.pointer(),
            h.width,
            h.height
        ),
    };
    measured(
        Obj::new()
            .int("non_power_of_two", npot.len() as u64)
            .int("textures", ok.len() as u64)
            .val("images", Value::Array(list)),
        Obj::new().int("max_non_power_of_two", 0),
        if npot.is_empty() { Comparison::Within } else { Comparison::Breach },
        message,
    )
}

/// Budget: darkest base colour allowed.
pub const MIN_BASE_COLOR: Param = Param {
    key: "min_base_color",
    unit: "sRGB 0-255",
    doc: "Darkest base colour allowed (HSV value, max of R, G, B)",
    overridable: false,
    integer: true,
};

/// Budget: brightest base colour allowed.
pub const MAX_BASE_COLOR: Param = Param {
    key: "max_base_color",
    unit: "sRGB 0-255",
    doc: "Brightest base colour allowed (HSV value, max of R, G, B)",
    overridable: false,
    integer: true,
};

/// MAT-006: its definition.
pub const BASE_COLOR_RANGE: CheckDef = CheckDef {
    id: "MAT-006",
    name: "PBR base-colour range",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[&MIN_BASE_COLOR, &MAX_BASE_COLOR],
    what: "For every material drawn in the default scene (the glTF default material aside: it has no authored colour), takes the base colour as the renderer does, the baseColorTexture's texel (sRGB) times baseColorFactor (linear), converted back to sRGB 0-255, and its HSV value, the largest of R, G and B, as the glTF-Asset-Auditor does (src/Image.ts). Every texel of the decoded image is read (the PNG, JPEG or WebP source: KTX2 texels are not decoded, and a texture with no other source is listed as unmeasured), texels with alpha 0 aside; a material without a texture contributes its factor. Reports the lowest and highest value over all measured materials.",
    why: "Physically based albedo stays between charcoal (about 30 sRGB) and fresh snow (about 243): darker or brighter base colours leave the renderer no headroom to add or subtract light, so surfaces look flat, glowing or crushed to black under realistic lighting (Khronos 3D Commerce asset guidelines; the auditor's pbrColorRange).",
    fix: "Remap the base-colour texture's levels (or the factor) into the range: darken pure whites to about 240 and lift pure blacks to about 30; move lighting and occlusion baked into the albedo into their own maps.",
    measured: &[
        ("base_color_min", "lowest base-colour value (max of R, G, B, sRGB 0-255) over the measured materials"),
        ("base_color_max", "highest base-colour value over the measured materials"),
        ("materials", "materials measured"),
        ("texels", "texels read over all decoded base-colour images"),
        ("by_material", "per material (at most 100, in index order): material, image (pointer or null), min, max"),
        ("unmeasured", "base-colour textures whose texels could not be read: material, reason (at most 100)"),
    ],
    threshold: &[("min_base_color", "lowest allowed value"), ("max_base_color", "highest allowed value")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: Some(("base_color_max", "max_base_color")),
    run: base_color_range,
};

/// sRGB (0-1) to linear.
fn srgb_to_linear(c: f64) -> f64 {
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

/// Linear (0-1, clamped) to sRGB 0-255, rounded.
fn linear_to_srgb8(c: f64) -> u8 {
    let c = c.clamp(0.0, 1.0);
    let s = if c <= 0.003_130_8 { c * 12.92 } else { 1.055 * c.powf(1.0 / 2.4) - 0.055 };
    (s * 255.0).round().clamp(0.0, 255.0) as u8
}

/// Per channel, sRGB texel 0-255 times a linear factor, back to sRGB 0-255.
fn factor_lut(factor: f64) -> [u8; 256] {
    let mut lut = [0u8; 256];
    for (t, out) in lut.iter_mut().enumerate() {
        *out = if factor == 1.0 { t as u8 } else { linear_to_srgb8(srgb_to_linear(t as f64 / 255.0) * factor) };
    }
    lut
}

/// A decoded base-colour image as MAT-006 reads it: RGB8 and RGBA8 (what
/// PNG and JPEG textures decode to) where the decoder left them, any other
/// layout converted to RGBA8 once, as it is decoded, not for every material
/// that samples it.
enum Texels {
    Rgb(image::RgbImage),
    Rgba(image::RgbaImage),
}

impl Texels {
    fn of(img: image::DynamicImage) -> Texels {
        match img {
            image::DynamicImage::ImageRgb8(b) => Texels::Rgb(b),
            image::DynamicImage::ImageRgba8(b) => Texels::Rgba(b),
            other => Texels::Rgba(other.into_rgba8()),
        }
    }

    /// Texels in the image.
    fn count(&self) -> u64 {
        let (w, h) = match self {
            Texels::Rgb(b) => b.dimensions(),
            Texels::Rgba(b) => b.dimensions(),
        };
        w as u64 * h as u64
    }

    /// Feeds every texel to each of `ranges`.
    fn feed(&self, ranges: &mut [Range]) {
        for r in ranges {
            match self {
                Texels::Rgb(b) => r.feed::<3>(b.as_raw()),
                Texels::Rgba(b) => r.feed::<4>(b.as_raw()),
            }
        }
    }
}

/// The lowest and highest HSV value of an image's texels with alpha above
/// 0 (an RGB texel has alpha 255) under one material's base-colour factor,
/// each channel mapped through its factor table; fed the texels in any
/// grouping (a whole image, or rows in any order), since neither end
/// depends on it. `None` while every texel fed was transparent.
struct Range {
    luts: [[u8; 256]; 3],
    /// Every factor 1 (most materials): every channel maps to itself, and
    /// the tables are then not read.
    identity: bool,
    found: Option<(u8, u8)>,
}

impl Range {
    fn new(factor: [f64; 3]) -> Range {
        let luts = factor.map(factor_lut);
        let identity = luts.iter().all(|l| l.iter().enumerate().all(|(i, &v)| v as usize == i));
        Range { luts, identity, found: None }
    }

    /// Feeds texels of `N` bytes (RGB, or RGBA with alpha last).
    fn feed<const N: usize>(&mut self, texels: &[u8]) {
        let got = match (self.identity, N) {
            (true, 3) => rgb_range(texels, &self.luts),
            (true, _) => scan::<N, false>(texels, &self.luts),
            (false, _) => scan::<N, true>(texels, &self.luts),
        };
        self.found = match (self.found, got) {
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
            (found, None) | (None, found) => found,
        };
    }
}

/// An image's texel count and its value range under each factor it was
/// read with ([`ranges_of`]).
type Measured = (u64, Vec<Option<(u8, u8)>>);

/// An image's texel count and its value range under each of `factors`
/// ([`Range`]). A PNG is read a row at a time ([`png_rows`]); any other
/// image, or a PNG that cannot be read so, is decoded whole
/// ([`decode_texels`]), which also words its errors.
fn ranges_of(bytes: &[u8], factors: &[[f64; 3]]) -> Result<Measured, String> {
    let fresh = || factors.iter().map(|&f| Range::new(f)).collect::<Vec<Range>>();
    let found = |ranges: Vec<Range>| ranges.into_iter().map(|r| r.found).collect();
    let mut ranges = fresh();
    let streamed = png_rows(bytes, |layout, row| {
        for r in ranges.iter_mut() {
            match layout {
                RowLayout::Rgb => r.feed::<3>(row),
                RowLayout::Rgba => r.feed::<4>(row),
            }
        }
    });
    if let Some(count) = streamed {
        return Ok((count, found(ranges)));
    }
    // What rows were fed before the stream failed is dropped with `ranges`.
    let texels = Texels::of(decode_texels(bytes)?);
    let mut ranges = fresh();
    texels.feed(&mut ranges);
    Ok((texels.count(), found(ranges)))
}

/// [`scan`] of RGB texels with every factor 1, 16 texels (48 bytes) at a
/// time in byte lanes, with no shuffles: the highest value is the highest
/// byte (every byte is a channel of some texel), and the lowest is the
/// least, over the lanes where a texel starts, of the largest of the three
/// bytes from there (the other lanes are raised to 255 by a mask). The
/// texels after the last whole window go through [`scan`]. About a fifth
/// of [`scan`]'s instructions: its loop reads three-byte texels one at a
/// time.
fn rgb_range(texels: &[u8], luts: &[[u8; 256]; 3]) -> Option<(u8, u8)> {
    const BLOCK: usize = 48;
    /// 0 on the lanes where a texel starts, 255 on the others.
    const NOT_START: [u8; BLOCK] = {
        let mut m = [u8::MAX; BLOCK];
        let mut k = 0;
        while k < BLOCK {
            m[k] = 0;
            k += 3;
        }
        m
    };
    let (mut lo, mut hi) = ([u8::MAX; BLOCK], [0u8; BLOCK]);
    let mut s = 0;
    // Each window is a block and the two bytes after it, which the last
    // texel start of the block reads.
    while s + BLOCK + 2 <= texels.len() {
        let w: &[u8; BLOCK + 2] = texels[s..s + BLOCK + 2].try_into().expect("a whole window");
        for i in 0..BLOCK {
            let v = w[i].max(w[i + 1]).max(w[i + 2]);
            lo[i] = lo[i].min(v | NOT_START[i]);
            hi[i] = hi[i].max(w[i]);
        }
        s += BLOCK;
    }
    let blocks = (s > 0).then(|| (lo.iter().fold(u8::MAX, |a, &v| a.min(v)), hi.iter().fold(0, |a, &v| a.max(v))));
    match (blocks, scan::<3, false>(&texels[s..], luts)) {
        (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        (found, None) | (None, found) => found,
    }
}

/// One pass with no branch per texel (a transparent texel moves neither
/// end).
#[inline(always)]
fn scan<const N: usize, const MAPPED: bool>(texels: &[u8], luts: &[[u8; 256]; 3]) -> Option<(u8, u8)> {
    let (mut lo, mut hi, mut seen) = (u8::MAX, 0u8, false);
    for px in texels.chunks_exact(N) {
        let v = if MAPPED {
            luts[0][px[0] as usize].max(luts[1][px[1] as usize]).max(luts[2][px[2] as usize])
        } else {
            px[0].max(px[1]).max(px[2])
        };
        let opaque = N == 3 || px[N - 1] != 0;
        lo = lo.min(if opaque { v } else { u8::MAX });
        hi = hi.max(if opaque { v } else { 0 });
        seen |= opaque;
    }
    seen.then_some((lo, hi))
}

/// MAT-006.
pub fn base_color_range(cx: &Ctx<'_>) -> CheckOutput {
    use crate::asset::material::decodable_image;
    use rayon::prelude::*;
    let root = &cx.asset.root;
    let mats: Vec<usize> = used_materials(cx).into_iter().flatten().filter(|&m| m < root.materials.len()).collect();
    if mats.is_empty() {
        return CheckOutput::Skipped("no drawn primitive has a material of its own".into());
    }
    // Each base-colour image read once, in parallel, under every factor
    // that some material samples it with.
    let factor = |m: usize| {
        let f = root.materials[m].pbr_metallic_roughness.base_color_factor.0;
        [f[0] as f64, f[1] as f64, f[2] as f64]
    };
    // Per image its factors; per material of `mats` with a decodable
    // base-colour image, that image and the place of its factor there.
    let mut wanted: BTreeMap<usize, Vec<[f64; 3]>> = BTreeMap::new();
    let slots: Vec<Option<(usize, usize)>> = mats
        .iter()
        .map(|&m| {
            let t = root.materials[m].pbr_metallic_roughness.base_color_texture.as_ref()?;
            let i = decodable_image(root, t.index.value())?;
            let (f, factors) = (factor(m), wanted.entry(i).or_default());
            let bits = |g: &[f64; 3]| g.map(f64::to_bits);
            let k = factors.iter().position(|g| bits(g) == bits(&f)).unwrap_or_else(|| {
                factors.push(f);
                factors.len() - 1
            });
            Some((i, k))
        })
        .collect();
    let decoded: BTreeMap<usize, Result<Measured, String>> = wanted
        .par_iter()
        .map(|(&i, factors)| {
            let bytes = cx.asset.image_data.get(i).and_then(|b| b.as_deref());
            (i, bytes.ok_or_else(|| "the image could not be loaded".to_string()).and_then(|b| ranges_of(b, factors)))
        })
        .collect();
    let texels: u64 = decoded.values().flatten().map(|(count, _)| count).sum();
    let (mut lo, mut hi) = (None::<u8>, None::<u8>);
    let mut rows = Vec::new();
    let mut unmeasured = Vec::new();
    for (&m, slot) in mats.iter().zip(&slots) {
        let pbr = &root.materials[m].pbr_metallic_roughness;
        let f = pbr.base_color_factor.0;
        let range = match &pbr.base_color_texture {
            None => {
                let v = (0..3).map(|k| linear_to_srgb8(f[k] as f64)).max().unwrap_or(0);
                Some((None, (v, v)))
            }
            Some(_) => match slot.map(|(i, k)| (i, k, &decoded[&i])) {
                None => {
                    unmeasured.push(json!({"material": m, "reason": "the texture has no PNG, JPEG or WebP source"}));
                    None
                }
                Some((i, _, Err(why))) => {
                    unmeasured.push(json!({"material": m, "reason": format!("/images/{i}: {why}")}));
                    None
                }
                Some((i, k, Ok((_, found)))) => found[k].map(|r| (Some(i), r)),
            },
        };
        if let Some((img, (a, b))) = range {
            lo = Some(lo.map_or(a, |x| x.min(a)));
            hi = Some(hi.map_or(b, |x| x.max(b)));
            rows.push(json!({"material": m, "image": img.map(|i| format!("/images/{i}")), "min": a, "max": b}));
        }
    }
    let (Some(lo), Some(hi)) = (lo, hi) else {
        return CheckOutput::Skipped(format!(
            "no base colour could be measured ({} unmeasured)",
            count(unmeasured.len() as u64, "texture", "textures")
        ));
    };
    let (min, max) = (cx.profile.get(&MIN_BASE_COLOR), cx.profile.get(&MAX_BASE_COLOR));
    let outcome = if (lo as f64) < min || (hi as f64) > max { Comparison::Breach } else { Comparison::Within };
    let message = format!(
        "base colours range from {lo} to {hi} (sRGB value) over {}, {} the PBR-safe {}-{}",
        count(rows.len() as u64, "material", "materials"),
        if outcome == Comparison::Breach { "outside" } else { "within" },
        min as u64,
        max as u64
    );
    measured(
        Obj::new()
            .int("base_color_min", lo as u64)
            .int("base_color_max", hi as u64)
            .int("materials", rows.len() as u64)
            .int("texels", texels)
            .val("by_material", Value::Array(rows.into_iter().take(MAX_LOCATIONS).collect()))
            .val("unmeasured", Value::Array(unmeasured.into_iter().take(MAX_LOCATIONS).collect())),
        Obj::new().param(cx.profile, &MIN_BASE_COLOR).param(cx.profile, &MAX_BASE_COLOR),
        outcome,
        message,
    )
}

/// MAT-007: its definition.
pub const COMPRESSION_MIPS: CheckDef = CheckDef {
    id: "MAT-007",
    name: "Texture compression and mipmaps",
    category: CATEGORY,
    severity: Severity::Warning,
    params: &[],
    what: "Over the images that drawn materials use (as MAT-001), takes the share of estimated GPU texture memory (MAT-002's estimate) held by GPU-compressed images: KTX2 in ETC1S or UASTC (Basis Universal) or in a block-compressed Vulkan format (BC, ETC2, EAC, ASTC, PVRTC). For each KTX2 image that some texture samples with mipmap minification or with no sampler, compares the levels stored (levelCount in its header) with a full chain down to 1x1 (floor(log2(longest side)) + 1); PNG, JPEG and WebP get their mipmaps from the viewer.",
    why: "Compressed textures stay compressed on the GPU (4 to 8 times less memory than RGBA8); but a block-compressed texture cannot have its mipmaps generated at load time, so a KTX2 without its full chain is drawn aliased and shimmering at a distance, or decompressed by the engine. KHR_texture_basisu: a KTX image sampled with mipmap minification (or no sampler) SHOULD contain a full mip pyramid.",
    fix: "Encode with mipmaps (toktx --genmipmap, KTX-Software's ktx create --generate-mipmap, gltf-transform etc1s/uastc, which keep them by default); convert large PNG/JPEG maps to KTX2 to cut GPU memory.",
    measured: &[
        ("compressed_pct", "GPU memory of GPU-compressed images, % of all measured images' GPU memory, 0 to 100"),
        ("compressed_images", "GPU-compressed images"),
        ("images", "images measured"),
        ("missing_mips", "KTX2 images sampled with mipmaps whose mip chain is incomplete"),
        ("incomplete", "per incomplete KTX2 image (at most 100): pointer, width, height, levels, levels_needed"),
    ],
    threshold: &[("max_missing_mips", "always 0")],
    needs: Needs { geometry: false, textures: true, validator: false, renderer: false },
    gauge: None,
    run: compression_mips,
};

/// Whether a KTX2 encoding ("etc1s", "uastc", "vkformat-N") is GPU block-compressed.
pub fn gpu_compressed(h: &ImageHeader) -> bool {
    match h.encoding.as_deref() {
        Some("etc1s" | "uastc") => true,
        Some(e) => e.strip_prefix("vkformat-").and_then(|n| n.parse::<u64>().ok()).is_some_and(|n| {
            // BC1..BC7, ETC2/EAC, ASTC LDR (131..=184); PVRTC (1000054000..=1000054007); ASTC HDR/3D (1000066000..=1000066013).
            (131..=184).contains(&n)
                || (1_000_054_000..=1_000_054_007).contains(&n)
                || (1_000_066_000..=1_000_066_013).contains(&n)
        }),
        None => false,
    }
}

/// Levels of a full mip chain for a `w` x `h` image.
pub fn full_chain(w: u32, h: u32) -> u32 {
    32 - w.max(h).max(1).leading_zeros()
}

/// Images sampled with mipmap minification, or with no sampler (glTF's
/// default lets the viewer choose, and viewers mipmap), by used materials.
fn mipmapped_images(cx: &Ctx<'_>) -> BTreeSet<usize> {
    use gltf::json::texture::MinFilter;
    use gltf::json::validation::Checked;
    let root = &cx.asset.root;
    let mut out = BTreeSet::new();
    for m in used_materials(cx).into_iter().flatten() {
        let Some(mat) = root.materials.get(m) else { continue };
        for (tex, _) in texture_slots(mat) {
            let Some(t) = root.textures.get(tex) else { continue };
            let filter = t.sampler.and_then(|s| root.samplers.get(s.value())).map(|s| s.min_filter);
            let mips = match filter {
                None | Some(None) => true,
                Some(Some(Checked::Valid(f))) => !matches!(f, MinFilter::Nearest | MinFilter::Linear),
                Some(Some(Checked::Invalid)) => true,
            };
            if let (true, Some(img)) = (mips, texture_image(t)) {
                out.insert(img);
            }
        }
    }
    out
}

/// MAT-007.
pub fn compression_mips(cx: &Ctx<'_>) -> CheckOutput {
    let images = used_images(cx);
    let ok = readable(&images);
    if ok.is_empty() {
        return CheckOutput::Skipped(if images.is_empty() {
            "no drawn material uses a texture".into()
        } else {
            format!("none of the {} used images has a readable header", images.len())
        });
    }
    let total: u64 = ok.iter().map(|(_, h)| h.gpu_bytes).fold(0, u64::saturating_add);
    let compressed: Vec<_> = ok.iter().filter(|(_, h)| gpu_compressed(h)).collect();
    let compressed_bytes: u64 = compressed.iter().map(|(_, h)| h.gpu_bytes).fold(0, u64::saturating_add);
    let share = if total == 0 { 0.0 } else { compressed_bytes as f64 * 100.0 / total as f64 };
    let mipmapped = mipmapped_images(cx);
    let incomplete: Vec<_> = ok
        .iter()
        .filter(|(r, h)| {
            h.format == ImageFormat::Ktx2 && mipmapped.contains(&r.index) && h.levels < full_chain(h.width, h.height)
        })
        .collect();
    let list: Vec<Value> = incomplete
        .iter()
        .take(MAX_LOCATIONS)
        .map(|(r, h)| {
            json!({"pointer": r.pointer(), "width": h.width, "height": h.height, "levels": h.levels,
                   "levels_needed": full_chain(h.width, h.height)})
        })
        .collect();
    let message = match incomplete.first() {
        Some((r, h)) => format!(
            "{} lacks part of its mip chain; first: {} has {} of {} levels ({}% of texture memory GPU-compressed)",
            count(incomplete.len() as u64, "KTX2 texture", "KTX2 textures"),
            r.pointer(),
            h.levels,
            full_chain(h.width, h.height),
            short(share)
        ),
        None => format!(
            "{}% of texture memory is GPU-compressed ({} of {}); every sampled KTX2 mip chain is complete",
            short(share),
            compressed.len(),
            count(ok.len() as u64, "image", "images")
        ),
    };
    measured(
        Obj::new()
            .num("compressed_pct", share)
            .int("compressed_images", compressed.len() as u64)
            .int("images", ok.len() as u64)
            .int("missing_mips", incomplete.len() as u64)
            .val("incomplete", Value::Array(list)),
        Obj::new().int("max_missing_mips", 0),
        if incomplete.is_empty() { Comparison::Within } else { Comparison::Breach },
        message,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`Texels::value_range`] computed before it read images where they lie:
    /// every texel converted to RGBA8, then mapped and compared one by one.
    fn reference(img: &image::DynamicImage, luts: &[[u8; 256]; 3]) -> Option<(u8, u8)> {
        let mut range: Option<(u8, u8)> = None;
        for px in img.to_rgba8().pixels() {
            let [r, g, b, a] = px.0;
            if a == 0 {
                continue;
            }
            let v = luts[0][r as usize].max(luts[1][g as usize]).max(luts[2][b as usize]);
            range = Some(range.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
        }
        range
    }

    #[test]
    fn value_range_reads_every_layout_as_rgba8_does() {
        use image::DynamicImage as D;
        let mut rng = crate::geom::testrng::XorShift::new(0x5eed_c010_4a11_0001);
        let factors = [[1.0, 1.0, 1.0], [0.5, 1.0, 2.0], [0.0, -1.0, f64::NAN], [1.0, 0.8, 1.0]];
        for case in 0..120u32 {
            // Up to 23 x 7 texels: RGB rows of several 16-texel blocks, and
            // texels after the last whole one.
            let (w, h) = (1 + case % 23, 1 + case % 7);
            let n = (w * h) as usize;
            // Channels spread over 0..=255; alpha mostly 0 or 255 (a
            // transparent image in some cases), and a few values between.
            let mut byte = || (rng.next_u64() >> 24) as u8;
            let alpha = |b: u8| if case % 5 == 0 { 0 } else { [0, 255, 255, b][b as usize % 4] };
            let rgb: Vec<u8> = (0..n * 3).map(|_| byte()).collect();
            let rgba: Vec<u8> = (0..n * 4).map(|i| if i % 4 == 3 { alpha(byte()) } else { byte() }).collect();
            let grey: Vec<u8> = (0..n * 2).map(|i| if i % 2 == 1 { alpha(byte()) } else { byte() }).collect();
            let wide: Vec<u16> = (0..n * 4).map(|_| (rng.next_u64() >> 40) as u16).collect();
            let images = [
                D::ImageRgb8(image::RgbImage::from_raw(w, h, rgb).unwrap()),
                D::ImageRgba8(image::RgbaImage::from_raw(w, h, rgba).unwrap()),
                D::ImageLumaA8(image::GrayAlphaImage::from_raw(w, h, grey).unwrap()),
                D::ImageRgba16(image::ImageBuffer::from_raw(w, h, wide).unwrap()),
            ];
            let f = factors[case as usize % factors.len()];
            let luts = [factor_lut(f[0]), factor_lut(f[1]), factor_lut(f[2])];
            for img in &images {
                let texels = Texels::of(img.clone());
                let mut whole = [Range::new(f)];
                texels.feed(&mut whole);
                assert_eq!(whole[0].found, reference(img, &luts), "case {case}, {:?}", img.color());
                // Row by row, last row first: the same range.
                let (raw, n) = match &texels {
                    Texels::Rgb(b) => (b.as_raw(), 3),
                    Texels::Rgba(b) => (b.as_raw(), 4),
                };
                let mut rows = Range::new(f);
                for row in raw.chunks(w as usize * n).rev() {
                    if n == 3 { rows.feed::<3>(row) } else { rows.feed::<4>(row) }
                }
                assert_eq!(rows.found, whole[0].found, "case {case}, {:?}, by rows", img.color());
            }
        }
        // No texels at all.
        let empty = Texels::of(D::ImageRgb8(image::RgbImage::new(0, 0)));
        let mut none = [Range::new([1.0; 3])];
        empty.feed(&mut none);
        assert_eq!((none[0].found, empty.count()), (None, 0));
    }

    #[test]
    fn a_png_read_by_rows_has_the_ranges_of_the_decoded_image() {
        use crate::asset::texture::test_png::{encoded, interlaced};
        use png::{BitDepth as B, ColorType as C};
        let mut rng = crate::geom::testrng::XorShift::new(0x0bad_cafe_f00d_0006);
        let mut byte = || (rng.next_u64() >> 24) as u8;
        // Two factors at once, one of them the identity.
        let factors = [[1.0, 1.0, 1.0], [0.5, 0.9, 1.0]];
        let samples: Vec<u8> = (0..40 * 13 * 4).map(|_| byte()).collect();
        let palette: Vec<u8> = (0..256 * 3).map(|i| (i * 7) as u8).collect();
        let pngs = [
            encoded((40, 13), C::Rgb, B::Eight, None, None, &mut byte),
            encoded((40, 13), C::Rgba, B::Eight, None, None, &mut byte),
            encoded((40, 13), C::GrayscaleAlpha, B::Eight, None, None, &mut byte),
            encoded((40, 13), C::Indexed, B::Eight, Some(&palette), Some(&[255, 0, 30]), &mut byte),
            encoded((40, 13), C::Rgb, B::Sixteen, None, None, &mut byte),
            interlaced((40, 13), 3, &samples[..40 * 13 * 3]),
            interlaced((40, 13), 4, &samples),
        ];
        for (case, bytes) in pngs.iter().enumerate() {
            let img = decode_texels(bytes).unwrap();
            let want: Vec<Option<(u8, u8)>> = factors.iter().map(|f| reference(&img, &f.map(factor_lut))).collect();
            assert_eq!(ranges_of(bytes, &factors), Ok((40 * 13, want)), "case {case}");
        }
        // An image that cannot be decoded: decode_texels's words.
        let cut = &pngs[0][..pngs[0].len() - 20];
        assert_eq!(ranges_of(cut, &factors).map(|_| ()), decode_texels(cut).map(|_| ()));
    }
}
