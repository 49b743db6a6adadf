//! Skin weights and animation keyframes: what the ANM checks measure beyond
//! the JSON, read while the buffers are at hand (the loader drops them once
//! the scene is built).
//!
//! The whole document is read, not only the default scene: every mesh
//! primitive that carries `WEIGHTS_n` and every animation sampler, since a
//! file ships (and an engine uploads) all of them. Accessors go through the
//! shared readers ([`DocData::read_floats`]: sparse substitution, meshopt
//! views, normalised integer weights and quantised keyframes as
//! KHR_mesh_quantization allows). What cannot be read (an accessor out of
//! range, a sampler that does not exist, an output whose length does not
//! fit its keyframes, Draco-compressed weights) is left out with a note.
//! A document without skins or animations costs nothing here.

use super::data::DocData;
use super::json::Note;
use gltf::json::validation::Checked;

/// How far apart two keyframe values may be and still be the same value:
/// glTF-Transform's `resample` default tolerance (`RESAMPLE_DEFAULTS`).
pub const STATIC_TOLERANCE: f32 = 1e-4;

/// Most `WEIGHTS_n` sets read per primitive (eight sets: 32 influences).
pub const MAX_WEIGHT_SETS: u32 = 8;

/// What was read of skins and animations.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Animation {
    /// One entry per mesh primitive with readable `WEIGHTS_n`.
    pub influences: Vec<Influences>,
    /// One entry per animation, in document order.
    pub clips: Vec<Clip>,
    /// What could not be read and was left out, each naming its JSON pointer.
    pub notes: Vec<Note>,
}

/// Skin influences of one primitive.
#[derive(Debug, Clone, PartialEq)]
pub struct Influences {
    /// Mesh index.
    pub mesh: usize,
    /// Primitive index in the mesh.
    pub primitive: usize,
    /// Vertices by how many non-zero weights they carry over every
    /// `WEIGHTS_n` set: `histogram[k]` vertices have `k` influences.
    pub histogram: Vec<u64>,
}

impl Influences {
    /// JSON pointer of the primitive.
    pub fn pointer(&self) -> String {
        format!("/meshes/{}/primitives/{}", self.mesh, self.primitive)
    }
    /// The most influences any vertex has.
    pub fn max(&self) -> u64 {
        self.histogram.iter().rposition(|&n| n > 0).unwrap_or(0) as u64
    }
    /// Vertices with more than `k` influences.
    pub fn over(&self, k: u64) -> u64 {
        self.histogram.iter().skip(k as usize + 1).sum()
    }
}

/// One animation's budget figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    /// Index in `animations`.
    pub index: usize,
    /// Channels.
    pub channels: u64,
    /// Samplers.
    pub samplers: u64,
    /// Keyframes: the sum of every readable sampler's input count (as
    /// glTF-Transform's `inspect` counts them).
    pub keyframes: u64,
    /// Earliest and latest keyframe time over the readable inputs, if any.
    pub span: Option<(f32, f32)>,
    /// Channels (indices) whose value never changes: every keyframe within
    /// [`STATIC_TOLERANCE`] of the first (cubic-spline tangents within it of zero).
    pub static_channels: Vec<usize>,
}

impl Clip {
    /// Seconds from the first keyframe to the last (0 with none).
    pub fn duration(&self) -> f64 {
        self.span.map_or(0.0, |(a, b)| (b as f64 - a as f64).max(0.0))
    }
}

/// Reads the skin weights and animation samplers of the document.
pub fn read(data: &DocData<'_>) -> Animation {
    let mut out = Animation::default();
    read_influences(data, &mut out);
    for index in 0..data.root.animations.len() {
        let clip = read_clip(data, index, &mut out.notes);
        out.clips.push(clip);
    }
    out
}

fn read_influences(data: &DocData<'_>, out: &mut Animation) {
    use gltf::json::mesh::Semantic;
    for (m, mesh) in data.root.meshes.iter().enumerate() {
        for (p, prim) in mesh.primitives.iter().enumerate() {
            let weights = |set: u32| prim.attributes.get(&Checked::Valid(Semantic::Weights(set)));
            if weights(0).is_none() {
                continue;
            }
            let pointer = format!("/meshes/{m}/primitives/{p}");
            if let Some(why) = data.unreadable(|| pointer.clone()) {
                out.notes.push(Note::new(pointer, format!("its skin weights cannot be read ({why}); left out")));
                continue;
            }
            let draco = prim
                .extensions
                .as_ref()
                .and_then(|e| e.others.get("KHR_draco_mesh_compression"))
                .and_then(|d| d.get("attributes"))
                .and_then(|a| a.as_object());
            let mut counts: Vec<u8> = Vec::new();
            let mut failed = None;
            for set in 0..MAX_WEIGHT_SETS {
                let Some(acc) = weights(set) else { break };
                if draco.is_some_and(|a| a.contains_key(&format!("WEIGHTS_{set}"))) {
                    failed = Some("its skin weights are Draco-compressed and are not read".to_string());
                    break;
                }
                match data.read_floats(acc.value(), 4) {
                    Ok(w) => {
                        let n = w.len() / 4;
                        if set == 0 {
                            counts = vec![0; n];
                        } else if n != counts.len() {
                            failed =
                                Some(format!("WEIGHTS_{set} has {n} elements where WEIGHTS_0 has {}", counts.len()));
                            break;
                        }
                        for (c, v) in counts.iter_mut().zip(w.chunks_exact(4)) {
                            *c += v.iter().filter(|&&x| x != 0.0).count() as u8;
                        }
                    }
                    Err(e) => {
                        failed = Some(format!("WEIGHTS_{set} cannot be read ({})", e.message));
                        break;
                    }
                }
            }
            if let Some(why) = failed {
                out.notes.push(Note::new(pointer, format!("{why}; its influences were left out")));
                continue;
            }
            let mut histogram = vec![0u64; 1 + 4 * MAX_WEIGHT_SETS as usize];
            for c in counts {
                histogram[c as usize] += 1;
            }
            while histogram.len() > 1 && histogram.last() == Some(&0) {
                histogram.pop();
            }
            out.influences.push(Influences { mesh: m, primitive: p, histogram });
        }
    }
}

fn read_clip(data: &DocData<'_>, index: usize, notes: &mut Vec<Note>) -> Clip {
    let anim = &data.root.animations[index];
    let mut clip = Clip {
        index,
        channels: anim.channels.len() as u64,
        samplers: anim.samplers.len() as u64,
        keyframes: 0,
        span: None,
        static_channels: Vec::new(),
    };
    let at = format!("/animations/{index}");
    if let Some(why) = data.unreadable(|| at.clone()) {
        notes.push(Note::new(at, format!("cannot be read ({why}); its keyframes were left out")));
        return clip;
    }
    // Each sampler's keyframe times, read once.
    let mut times: Vec<Option<Vec<f32>>> = Vec::with_capacity(anim.samplers.len());
    for (s, sampler) in anim.samplers.iter().enumerate() {
        match data.read_floats(sampler.input.value(), 1) {
            Ok(t) => {
                clip.keyframes += t.len() as u64;
                let finite = t.iter().copied().filter(|x| x.is_finite());
                let span = finite
                    .fold(None, |acc: Option<(f32, f32)>, x| Some(acc.map_or((x, x), |(a, b)| (a.min(x), b.max(x)))));
                if let Some((a, b)) = span {
                    clip.span = Some(clip.span.map_or((a, b), |(ca, cb)| (ca.min(a), cb.max(b))));
                }
                times.push(Some(t));
            }
            Err(e) => {
                notes.push(Note::new(
                    format!("{at}/samplers/{s}"),
                    format!("its input cannot be read ({}); its keyframes were left out", e.message),
                ));
                times.push(None);
            }
        }
    }
    for (c, channel) in anim.channels.iter().enumerate() {
        let s = channel.sampler.value();
        let Some(sampler) = anim.samplers.get(s) else {
            notes.push(Note::new(format!("{at}/channels/{c}"), format!("names sampler {s}, which does not exist")));
            continue;
        };
        let Some(Some(t)) = times.get(s) else { continue };
        let cubic = matches!(sampler.interpolation, Checked::Valid(gltf::json::animation::Interpolation::CubicSpline));
        let out_acc = sampler.output.value();
        let components = match data.root.accessors.get(out_acc).map(|a| &a.type_) {
            Some(Checked::Valid(gltf::json::accessor::Type::Vec3)) => 3,
            Some(Checked::Valid(gltf::json::accessor::Type::Vec4)) => 4,
            _ => 1,
        };
        let values = match data.read_floats(out_acc, components) {
            Ok(v) => v,
            Err(e) => {
                notes.push(Note::new(
                    format!("{at}/samplers/{s}"),
                    format!("its output cannot be read ({}); channel {c} was not judged static or not", e.message),
                ));
                continue;
            }
        };
        match is_static(t.len(), &values, cubic) {
            Some(true) => clip.static_channels.push(c),
            Some(false) => {}
            None => notes.push(Note::new(
                format!("{at}/samplers/{s}"),
                format!(
                    "its output holds {} values for {} keyframes, which does not divide evenly; channel {c} was not judged static or not",
                    values.len(),
                    t.len()
                ),
            )),
        }
    }
    clip
}

/// Whether every keyframe's value lies within [`STATIC_TOLERANCE`] of the
/// first's (cubic-spline: the values, and tangents within it of zero);
/// `None` when the output does not divide into the keyframes.
fn is_static(keyframes: usize, values: &[f32], cubic: bool) -> Option<bool> {
    let per = if cubic { 3 } else { 1 };
    if keyframes == 0 || values.is_empty() || !values.len().is_multiple_of(keyframes * per) {
        return None;
    }
    let width = values.len() / (keyframes * per);
    let frames: Vec<&[f32]> = values.chunks_exact(width).collect();
    let near = |a: f32, b: f32| (a - b).abs() <= STATIC_TOLERANCE;
    if cubic {
        let first = frames[1];
        Some(frames.chunks_exact(3).all(|k| {
            k[1].iter().zip(first).all(|(&a, &b)| near(a, b)) && k[0].iter().chain(k[2]).all(|&x| near(x, 0.0))
        }))
    } else {
        let first = frames[0];
        Some(frames.iter().all(|f| f.iter().zip(first).all(|(&a, &b)| near(a, b))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_channels() {
        assert_eq!(is_static(3, &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.00005, 3.0], false), Some(true));
        assert_eq!(is_static(3, &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.001, 3.0], false), Some(false));
        assert_eq!(is_static(2, &[0.0, 1.0, 0.0, 0.0, 1.0, 0.0], true), Some(true));
        assert_eq!(is_static(2, &[0.5, 1.0, 0.0, 0.0, 1.0, 0.0], true), Some(false), "a tangent moves it");
        assert_eq!(is_static(2, &[1.0, 2.0, 3.0], false), None);
        assert_eq!(is_static(0, &[], false), None);
        // Weights: two targets per keyframe.
        assert_eq!(is_static(2, &[0.0, 1.0, 0.0, 1.0], false), Some(true));
        assert_eq!(is_static(2, &[0.0, 1.0, 1.0, 0.0], false), Some(false));
    }

    #[test]
    fn histogram_figures() {
        let i = Influences { mesh: 0, primitive: 1, histogram: vec![0, 3, 2, 0, 5, 1] };
        assert_eq!(i.max(), 5);
        assert_eq!(i.over(4), 1);
        assert_eq!(i.over(1), 8);
        assert_eq!(i.pointer(), "/meshes/0/primitives/1");
    }
}
