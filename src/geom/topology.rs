//! Triangle assembly from primitive modes (glTF 2.0 section 3.7.2.1).

/// Triangles drawn by `n` vertices in a primitive mode: TRIANGLES (4),
/// TRIANGLE_STRIP (5) and TRIANGLE_FAN (6) draw triangles; points and lines
/// (0..=3) draw none.
pub fn triangle_count(mode: u32, n: usize) -> usize {
    match mode {
        4 => n / 3,
        5 | 6 => n.saturating_sub(2),
        _ => 0,
    }
}

/// Assembles the triangles of a primitive from its index list (or 0..n when
/// `indices` is `None`). Triangles naming a vertex at or past `vertex_count`
/// are left out; the count of those left out is returned beside them.
pub fn assemble(mode: u32, indices: Option<&[u32]>, n: usize, vertex_count: usize) -> (Vec<[u32; 3]>, usize) {
    let at = |i: usize| -> u32 { indices.map_or(i as u32, |ix| ix[i]) };
    let total = triangle_count(mode, n);
    let mut out = Vec::with_capacity(total);
    let vc = vertex_count as u64;
    let mut push = |t: [u32; 3]| {
        if (t[0] as u64) < vc && (t[1] as u64) < vc && (t[2] as u64) < vc {
            out.push(t);
        }
    };
    match mode {
        4 => match indices {
            Some(ix) => ix[..total * 3].chunks_exact(3).for_each(|c| push([c[0], c[1], c[2]])),
            None => (0..total).for_each(|i| push([3 * i as u32, 3 * i as u32 + 1, 3 * i as u32 + 2])),
        },
        5 => {
            for i in 0..total {
                // Even triangles keep the strip's order, odd ones swap the first two.
                if i % 2 == 0 {
                    push([at(i), at(i + 1), at(i + 2)]);
                } else {
                    push([at(i + 1), at(i), at(i + 2)]);
                }
            }
        }
        6 => {
            for i in 0..total {
                push([at(i + 1), at(i + 2), at(0)]);
            }
        }
        _ => {}
    }
    let dropped = total - out.len();
    (out, dropped)
}

/// An indexed triangle list's triangles, regrouped from the index vector in
/// place (no second allocation); triangles naming a vertex at or past
/// `vertex_count` are removed and counted.
pub fn triangle_list(indices: Vec<u32>, vertex_count: usize) -> (Vec<[u32; 3]>, usize) {
    let mut tris: Vec<[u32; 3]> = super::flat::arrays(indices);
    let before = tris.len();
    let vc = vertex_count as u64;
    if tris.iter().any(|t| t.iter().any(|&v| v as u64 >= vc)) {
        tris.retain(|t| t.iter().all(|&v| (v as u64) < vc));
    }
    let dropped = before - tris.len();
    (tris, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        // A 5-vertex strip: 3 triangles, alternating order.
        let (t, d) = assemble(5, None, 5, 5);
        assert_eq!(t, vec![[0, 1, 2], [2, 1, 3], [2, 3, 4]]);
        assert_eq!(d, 0);
        // A 5-vertex fan around vertex 0.
        let (t, _) = assemble(6, None, 5, 5);
        assert_eq!(t, vec![[1, 2, 0], [2, 3, 0], [3, 4, 0]]);
        // Points and lines draw no triangles.
        for mode in 0..4 {
            assert!(assemble(mode, None, 6, 6).0.is_empty());
        }
        // Out-of-range indices are dropped and counted.
        let (t, d) = assemble(4, Some(&[0, 1, 2, 0, 1, 9]), 6, 3);
        assert_eq!((t.len(), d), (1, 1));
        let (t, d) = triangle_list(vec![0, 1, 2, 0, 1, 9, 2], 3);
        assert_eq!((t, d), (vec![[0, 1, 2]], 1), "a trailing partial triangle is not drawn");
    }
}
