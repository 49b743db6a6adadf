//! The geometry fuzz target's body ([`exercise`]): arbitrary bytes decoded
//! into points, triangles and a tolerance, run through the weld, edge map,
//! shells and winding, with their invariants checked.

use super::edges::Topology;

/// Decodes arbitrary bytes into points, triangles and a tolerance and runs
/// the whole pass on them, checking its invariants: the fuzz target's body
/// (`fuzz/fuzz_targets/geometry.rs`), also run on random bytes by the unit tests.
///
/// Layout: byte 0 picks the tolerance (0, or 10^-k); then 12 bytes per point
/// (three f32) for as many points as byte 1 says (at most 255), then 3 bytes
/// per triangle (indices modulo the point count).
pub fn exercise(data: &[u8]) {
    let (Some(&t), Some(&np)) = (data.first(), data.get(1)) else { return };
    let tol = if t == 0 { 0.0 } else { 10f64.powi(-((t % 8) as i32)) };
    let np = np as usize;
    let body = &data[2..];
    let need = np * 12;
    if np == 0 || body.len() < need {
        return;
    }
    let points: Vec<[f64; 3]> = body[..need]
        .chunks_exact(12)
        .map(|c| {
            let f = |i: usize| f32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]) as f64;
            [f(0), f(4), f(8)]
        })
        .collect();
    let triangles: Vec<[u32; 3]> = body[need..]
        .chunks_exact(3)
        .map(|c| [c[0] as u32 % np as u32, c[1] as u32 % np as u32, c[2] as u32 % np as u32])
        .collect();
    let topo = Topology::build(&points, &triangles, tol);
    let faces: usize = topo.edges.iter().map(|e| e.count as usize).sum();
    let live = topo.live_triangles();
    assert_eq!(live, (0..topo.triangles.len()).filter(|&t| !topo.collapsed(t)).count());
    assert_eq!(faces, 3 * live, "every live triangle has three edges");
    assert!(topo.flipped_faces().len() <= live / 2 + 1);
    assert!(topo.boundary_loops() <= topo.boundary_edges().count());
    assert!(topo.shell_count <= live);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exercise_survives_random_bytes() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in [0usize, 1, 2, 14, 100, 1000, 5000] {
            for _ in 0..20 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        (x >> 24) as u8
                    })
                    .collect();
                exercise(&bytes);
            }
        }
    }
}
