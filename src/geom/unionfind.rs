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
