// meshcheck studio shader: glTF 2.0 metallic-roughness PBR under the fixed
// three-point rig (src/render/rig.rs), with base colour (factor, texture,
// vertex colour), normal, occlusion and emissive maps, KHR_texture_transform,
// alpha modes and double-sided materials. Missing normals are shaded flat
// (glTF 2.0 3.7.2.1); missing tangents come from screen-space derivatives.
// Output is linear light through the Khronos PBR Neutral tone mapper, written
// to an sRGB target, premultiplied by alpha.

struct Camera {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    light_dir: array<vec4<f32>, 3>,
    light_color: array<vec4<f32>, 3>,
    sky: vec4<f32>,
    ground: vec4<f32>,
};

struct Draw {
    model: mat4x4<f32>,
    normal: mat4x4<f32>,
};

// Per texture slot (base colour, metallic-roughness, normal, occlusion,
// emissive): two rows of the UV affine transform; row0.w = UV set.
struct Material {
    base_color: vec4<f32>,
    emissive: vec4<f32>,
    // metallic, roughness, normal scale, occlusion strength
    params: vec4<f32>,
    // alpha mode (0 opaque, 1 mask, 2 blend), cutoff, unlit, has normal map
    alpha: vec4<f32>,
    xf: array<vec4<f32>, 10>,
};

@group(0) @binding(0) var<uniform> cam: Camera;
@group(0) @binding(1) var<storage, read> draws: array<Draw>;

@group(1) @binding(0) var<uniform> mat: Material;
@group(1) @binding(1) var t_base: texture_2d<f32>;
@group(1) @binding(2) var s_base: sampler;
@group(1) @binding(3) var t_mr: texture_2d<f32>;
@group(1) @binding(4) var s_mr: sampler;
@group(1) @binding(5) var t_normal: texture_2d<f32>;
@group(1) @binding(6) var s_normal: sampler;
@group(1) @binding(7) var t_occ: texture_2d<f32>;
@group(1) @binding(8) var s_occ: sampler;
@group(1) @binding(9) var t_emit: texture_2d<f32>;
@group(1) @binding(10) var s_emit: sampler;

struct VIn {
    @location(0) pos: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) tangent: vec4<f32>,
    @location(3) uv0: vec2<f32>,
    @location(4) uv1: vec2<f32>,
    @location(5) color: vec4<f32>,
    @builtin(instance_index) draw: u32,
};

struct VOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) tangent: vec4<f32>,
    @location(3) uv0: vec2<f32>,
    @location(4) uv1: vec2<f32>,
    @location(5) color: vec4<f32>,
};

@vertex
fn vs_main(v: VIn) -> VOut {
    let d = draws[v.draw];
    let world = d.model * vec4<f32>(v.pos, 1.0);
    var out: VOut;
    out.clip = cam.view_proj * world;
    out.world = world.xyz;
    out.normal = (d.normal * vec4<f32>(v.normal, 0.0)).xyz;
    out.tangent = vec4<f32>((d.model * vec4<f32>(v.tangent.xyz, 0.0)).xyz, v.tangent.w);
    out.uv0 = v.uv0;
    out.uv1 = v.uv1;
    out.color = v.color;
    return out;
}

fn slot_uv(slot: u32, uv0: vec2<f32>, uv1: vec2<f32>) -> vec2<f32> {
    let r0 = mat.xf[slot * 2u];
    let r1 = mat.xf[slot * 2u + 1u];
    let uv = select(uv0, uv1, r0.w > 0.5);
    return vec2<f32>(dot(r0.xyz, vec3<f32>(uv, 1.0)), dot(r1.xyz, vec3<f32>(uv, 1.0)));
}

const PI: f32 = 3.14159265;

fn neutral_tonemap(c_in: vec3<f32>) -> vec3<f32> {
    let start = 0.8 - 0.04;
    let desat = 0.15;
    var c = c_in;
    let x = min(c.r, min(c.g, c.b));
    let offset = select(0.04, x - 6.25 * x * x, x < 0.08);
    c = c - offset;
    let peak = max(c.r, max(c.g, c.b));
    if peak < start {
        return c;
    }
    let d = 1.0 - start;
    let new_peak = 1.0 - d * d / (peak + d - start);
    c = c * (new_peak / peak);
    let g = 1.0 - 1.0 / (desat * (peak - new_peak) + 1.0);
    return mix(c, vec3<f32>(new_peak), g);
}

fn ggx(n_h: f32, a: f32) -> f32 {
    let a2 = a * a;
    let d = n_h * n_h * (a2 - 1.0) + 1.0;
    return a2 / (PI * d * d);
}

fn smith(n_v: f32, n_l: f32, a: f32) -> f32 {
    let a2 = a * a;
    let gv = n_l * sqrt(n_v * n_v * (1.0 - a2) + a2);
    let gl = n_v * sqrt(n_l * n_l * (1.0 - a2) + a2);
    let s = gv + gl;
    return select(0.0, 0.5 / s, s > 0.0);
}

@fragment
fn fs_main(in: VOut, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    // Every texture is sampled (a white or flat 1x1 stands in for a missing
    // one), so control flow stays uniform for the derivatives.
    let base_tex = textureSample(t_base, s_base, slot_uv(0u, in.uv0, in.uv1));
    let mr_tex = textureSample(t_mr, s_mr, slot_uv(1u, in.uv0, in.uv1));
    let normal_uv = slot_uv(2u, in.uv0, in.uv1);
    let normal_tex = textureSample(t_normal, s_normal, normal_uv);
    let occ_tex = textureSample(t_occ, s_occ, slot_uv(3u, in.uv0, in.uv1));
    let emit_tex = textureSample(t_emit, s_emit, slot_uv(4u, in.uv0, in.uv1));
    let dp_dx = dpdx(in.world);
    let dp_dy = dpdy(in.world);
    let duv_dx = dpdx(normal_uv);
    let duv_dy = dpdy(normal_uv);

    var base = mat.base_color * base_tex * in.color;
    let mode = u32(mat.alpha.x + 0.5);
    if mode == 0u {
        base.a = 1.0;
    } else if mode == 1u {
        if base.a < mat.alpha.y {
            discard;
        }
        base.a = 1.0;
    }

    let v = normalize(cam.eye.xyz - in.world);
    // Geometric normal: the vertex normal, or flat from the derivatives.
    var flat_n = cross(dp_dx, dp_dy);
    flat_n = select(vec3<f32>(0.0, 0.0, 1.0), normalize(flat_n), dot(flat_n, flat_n) > 1e-30);
    flat_n = select(-flat_n, flat_n, dot(flat_n, v) >= 0.0);
    var n = in.normal;
    let has_normal = dot(n, n) > 1e-12;
    n = select(flat_n, normalize(n), has_normal);
    if has_normal && !front {
        n = -n;
    }

    if mat.alpha.z > 0.5 {
        // KHR_materials_unlit
        let c = neutral_tonemap(base.rgb);
        return vec4<f32>(c * base.a, base.a);
    }

    // Normal map: tangent frame from TANGENT, or from the derivatives.
    if mat.alpha.w > 0.5 {
        var t = in.tangent.xyz;
        var w = in.tangent.w;
        let den = duv_dx.x * duv_dy.y - duv_dy.x * duv_dx.y;
        if dot(t, t) < 1e-12 {
            t = select(vec3<f32>(0.0), (duv_dy.y * dp_dx - duv_dx.y * dp_dy) / den, abs(den) > 1e-20);
            w = 1.0;
        }
        t = t - n * dot(n, t);
        if dot(t, t) > 1e-20 {
            t = normalize(t);
            let b = cross(n, t) * select(-1.0, 1.0, w >= 0.0);
            let s = mat.params.z;
            let tn = normalize((normal_tex.xyz * 2.0 - 1.0) * vec3<f32>(s, s, 1.0));
            n = normalize(t * tn.x + b * tn.y + n * tn.z);
        }
    }

    let metallic = clamp(mat.params.x * mr_tex.b, 0.0, 1.0);
    let rough = clamp(mat.params.y * mr_tex.g, 0.04, 1.0);
    let a = rough * rough;
    let f0 = mix(vec3<f32>(0.04), base.rgb, metallic);
    let diffuse = base.rgb * (1.0 - metallic);
    let n_v = max(dot(n, v), 1e-4);

    var color = vec3<f32>(0.0);
    for (var i = 0u; i < 3u; i = i + 1u) {
        let l = cam.light_dir[i].xyz;
        let n_l = dot(n, l);
        if n_l > 0.0 {
            let h = normalize(l + v);
            let n_h = max(dot(n, h), 0.0);
            let v_h = max(dot(v, h), 0.0);
            let f = f0 + (1.0 - f0) * pow(1.0 - v_h, 5.0);
            let spec = f * ggx(n_h, a) * smith(n_v, n_l, a);
            let kd = (1.0 - f) * diffuse / PI;
            color = color + (kd + spec) * cam.light_color[i].rgb * n_l;
        }
    }
    // Ambient: a sky/ground hemisphere, diffuse by the normal, specular by
    // the reflection, weighted by a roughness-aware Fresnel.
    let hemi = mix(cam.ground.rgb, cam.sky.rgb, n.y * 0.5 + 0.5);
    let r = reflect(-v, n);
    let env = mix(cam.ground.rgb, cam.sky.rgb, mix(r.y, n.y, a) * 0.5 + 0.5);
    let fr = f0 + (max(vec3<f32>(1.0 - rough), f0) - f0) * pow(1.0 - n_v, 5.0);
    let occlusion = 1.0 + mat.params.w * (occ_tex.r - 1.0);
    color = color + (diffuse * hemi + fr * env) * occlusion;
    color = color + mat.emissive.rgb * emit_tex.rgb;

    let c = neutral_tonemap(max(color, vec3<f32>(0.0)));
    return vec4<f32>(c * base.a, base.a);
}
