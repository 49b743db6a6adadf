//! Defects on purpose: the [`Prim`] mutators that flip triangles, punch
//! holes, add degenerate triangles or floating debris, drop UVs, move and
//! scale, each keeping every attribute array as long as the positions.

use super::scene::Prim;
use super::shapes::{cross, dot, index_of, sub};
use std::ops::Range;

impl Prim {
    /// Number of triangles (assuming `TRIANGLES` mode).
    pub fn triangle_count(&self) -> usize {
        match &self.indices {
            Some(i) => i.len() / 3,
            None => self.positions.len() / 3,
        }
    }

    /// Makes the primitive indexed (`0..n`) if it is not already; the
    /// geometry is unchanged.
    pub fn ensure_indexed(&mut self) {
        if self.indices.is_none() {
            let n = index_of(self.positions.len());
            self.indices = Some((0..n).collect());
        }
    }

    /// Mutable access to the indices, creating them first if needed.
    fn indices_mut(&mut self) -> &mut Vec<u32> {
        self.ensure_indexed();
        self.indices.get_or_insert_with(Vec::new)
    }

    /// Reverses the winding of triangles `range` (triangle indices, not
    /// index offsets). A non-indexed primitive is made indexed first.
    ///
    /// # Panics
    ///
    /// If the range exceeds the triangle count.
    pub fn flip_triangles(&mut self, range: Range<usize>) {
        let indices = self.indices_mut();
        let tris = &mut indices[range.start * 3..range.end * 3];
        for tri in tris.chunks_exact_mut(3) {
            tri.swap(1, 2);
        }
    }

    /// Removes triangle `i`, punching a hole in a closed surface. For a
    /// non-indexed primitive its three vertices (and their attributes) are
    /// removed.
    ///
    /// # Panics
    ///
    /// If `i` is not a valid triangle index.
    pub fn remove_triangle(&mut self, i: usize) {
        let span = i * 3..i * 3 + 3;
        match &mut self.indices {
            Some(indices) => {
                assert!(span.end <= indices.len(), "no triangle {i}");
                indices.drain(span);
            }
            None => {
                assert!(span.end <= self.positions.len(), "no triangle {i}");
                self.positions.drain(span.clone());
                for uv in &mut self.uvs {
                    uv.drain(span.clone());
                }
                if let Some(n) = &mut self.normals {
                    n.drain(span);
                }
            }
        }
    }

    /// Appends a degenerate triangle (one that repeats an index) built from
    /// existing vertices. A non-indexed primitive is made indexed first.
    ///
    /// # Panics
    ///
    /// If the primitive has no vertices.
    pub fn add_degenerate(&mut self) {
        let n = self.positions.len();
        assert!(n > 0, "testkit: add_degenerate needs at least one vertex");
        let other = index_of(n.min(2) - 1);
        self.indices_mut().extend_from_slice(&[0, 0, other]);
    }

    /// Appends a small closed tetrahedron (4 new vertices, 4 triangles,
    /// outward CCW winding) of roughly `size` extent centred at `offset`,
    /// disconnected from the rest of the mesh. UV sets and normals, when
    /// present, are extended to match. A non-indexed primitive is made
    /// indexed first.
    pub fn add_debris(&mut self, offset: [f32; 3], size: f32) {
        let corners: [[f32; 3]; 4] = [[1.0, 1.0, 1.0], [1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]];
        let h = size / 2.0;
        let verts = corners.map(|c| std::array::from_fn(|i| offset[i] + h * c[i]));
        let base = index_of(self.positions.len());
        let _ = index_of(self.positions.len() + 4);
        let mut tris: [[u32; 3]; 4] = [[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]];
        for (t, opposite) in tris.iter_mut().zip([3usize, 2, 1, 0]) {
            // Orient each face away from the vertex not on it.
            let [a, b, c] = t.map(|i| corners[i as usize]);
            let n = cross(sub(b, a), sub(c, a));
            if dot(n, sub(a, corners[opposite])) < 0.0 {
                t.swap(1, 2);
            }
        }
        let indices = self.indices_mut();
        for t in tris {
            indices.extend(t.map(|i| base + i));
        }
        self.positions.extend_from_slice(&verts);
        let inv = 1.0 / 3f32.sqrt();
        if let Some(n) = &mut self.normals {
            n.extend(corners.map(|c| c.map(|x| x * inv)));
        }
        for uv in &mut self.uvs {
            uv.extend_from_slice(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
        }
    }

    /// Removes every UV set.
    pub fn drop_uvs(&mut self) {
        self.uvs.clear();
    }

    /// Translates all positions by `d`.
    pub fn translate(&mut self, d: [f32; 3]) {
        for p in &mut self.positions {
            for i in 0..3 {
                p[i] += d[i];
            }
        }
    }

    /// Scales all positions uniformly by `s` about the origin. Normals are
    /// left unchanged (they stay correct for `s > 0`).
    pub fn scale(&mut self, s: f32) {
        for p in &mut self.positions {
            for c in p.iter_mut() {
                *c *= s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::readback::{assert_consistent, assert_outward};
    use super::super::scene::Prim;
    use super::super::shapes::{cube, quad};

    #[test]
    fn mutators_keep_attributes_consistent() {
        let mut c = cube(1.0);
        c.flip_triangles(0..2);
        assert_eq!(&c.indices.as_ref().unwrap()[0..3], &[0, 2, 1]);
        c.remove_triangle(11);
        assert_eq!(c.triangle_count(), 11);
        c.add_degenerate();
        assert_eq!(c.triangle_count(), 12);
        let last = &c.indices.as_ref().unwrap()[33..36];
        assert!(last[0] == last[1] || last[1] == last[2] || last[0] == last[2]);
        c.add_debris([5.0, 0.0, 0.0], 0.1);
        assert_eq!(c.positions.len(), 28);
        assert_eq!(c.triangle_count(), 16);
        assert_consistent(&c);

        // Debris on its own is an outward-wound closed tetrahedron.
        let mut t = Prim::default();
        t.add_debris([0.0; 3], 1.0);
        assert_eq!(t.triangle_count(), 4);
        assert_outward(&t);
        let mut edges: Vec<(u32, u32)> = t
            .indices
            .as_ref()
            .unwrap()
            .chunks_exact(3)
            .flat_map(|tri| [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])])
            .collect();
        edges.sort();
        for &(a, b) in &edges {
            assert!(edges.binary_search(&(b, a)).is_ok(), "open edge {a}-{b}");
        }

        // Non-indexed primitives.
        let mut n = Prim {
            positions: [[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]].repeat(2),
            uvs: vec![vec![[0.0; 2]; 6]],
            ..Prim::default()
        };
        n.remove_triangle(0);
        assert_eq!(n.positions.len(), 3);
        assert_consistent(&n);
        n.flip_triangles(0..1);
        assert_eq!(n.indices.as_deref(), Some(&[0, 2, 1][..]));

        let mut m = quad(2.0);
        m.translate([1.0, 2.0, 3.0]);
        m.scale(2.0);
        assert_eq!(m.positions[0], [0.0, 2.0, 6.0]);
        m.drop_uvs();
        assert!(m.uvs.is_empty());
    }
}
