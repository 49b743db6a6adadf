//! Union-find (disjoint sets) over `u32` elements, with path halving and
//! union by size: the weld, the shells and the UV islands all group with it.

/// Union-find with path halving and union by size.
#[derive(Debug, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> UnionFind {
        UnionFind { parent: (0..n as u32).collect(), size: vec![1; n] }
    }
    /// The representative of `x`.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = self.parent[x as usize];
        }
        x
    }
    /// Joins the sets of `a` and `b`; true when they were apart.
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (big, small) = if self.size[ra as usize] >= self.size[rb as usize] { (ra, rb) } else { (rb, ra) };
        self.parent[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
        true
    }
    /// Component labels 0..k, numbered in order of each component's first
    /// element, and k.
    pub fn labels(&mut self) -> (Vec<u32>, usize) {
        let n = self.parent.len();
        let mut label = vec![u32::MAX; n];
        let mut out = vec![0u32; n];
        let mut k = 0u32;
        for i in 0..n as u32 {
            let r = self.find(i) as usize;
            if label[r] == u32::MAX {
                label[r] = k;
                k += 1;
            }
            out[i as usize] = label[r];
        }
        (out, k as usize)
    }
}

/// [`UnionFind`] in 5 bytes an element instead of 8: union by rank (a byte)
/// rather than by size, for the large per-triangle and per-corner sets of
/// the edge map (shells, non-manifold vertices). Which elements end up
/// together, and whether a union joined two sets, do not depend on how the
/// trees are linked, so its answers are [`UnionFind`]'s.
#[derive(Debug, Clone)]
pub struct RankedUnionFind {
    parent: Vec<u32>,
    rank: Vec<u8>,
}

impl RankedUnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> RankedUnionFind {
        RankedUnionFind { parent: (0..n as u32).collect(), rank: vec![0; n] }
    }
    /// The representative of `x`.
    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let p = self.parent[x as usize];
            self.parent[x as usize] = self.parent[p as usize];
            x = self.parent[x as usize];
        }
        x
    }
    /// Joins the sets of `a` and `b`; true when they were apart.
    pub fn union(&mut self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        let (high, low) = if self.rank[ra as usize] >= self.rank[rb as usize] { (ra, rb) } else { (rb, ra) };
        self.parent[low as usize] = high;
        if self.rank[high as usize] == self.rank[low as usize] {
            self.rank[high as usize] += 1;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranked_agrees_with_sized() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = move |n: u32| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as u32
        };
        for n in [1u32, 2, 10, 1000] {
            let (mut a, mut b) = (UnionFind::new(n as usize), RankedUnionFind::new(n as usize));
            for _ in 0..2 * n {
                let (x, y) = (rnd(n), rnd(n));
                assert_eq!(a.union(x, y), b.union(x, y));
            }
            for x in 0..n {
                for y in [0, x / 2, n - 1] {
                    assert_eq!(a.find(x) == a.find(y), b.find(x) == b.find(y));
                }
            }
        }
    }
}
