//! Winding by parity: which triangles disagree with their patch's majority
//! winding, from a union-find that keeps each triangle's orientation
//! relative to its set's root (one bit a triangle, packed beside the
//! parent), fed the manifold edges in one sequential pass.
//!
//! Two triangles across a manifold edge agree when they traverse it in
//! opposite directions; a patch is a component over manifold edges. When
//! every edge of a patch agrees with one assignment of orientations (an
//! orientable patch), that assignment is unique once its first triangle is
//! fixed, so it is the one any walk over the patch finds, the breadth-first
//! walk of [`super::edges`] included. When some edge contradicts it (a
//! Möbius band, a patch whose windings cannot be made consistent), the
//! answer depends on the walk's order: [`flipped`] then returns `None` and
//! the caller walks, so the result is the walk's in every case.
//!
//! Nothing here knows about edges or meshes: the caller hands the pairs.

use crate::geom::bits::Bits;

/// The parent's high bit: the element's orientation relative to its parent.
const PARITY: u32 = 1 << 31;

/// Union-find over `u32` elements (fewer than 2^31) with a parity bit per
/// element relative to its parent, path halving and union by rank: 5 bytes
/// an element.
struct ParityUnionFind {
    parent: Vec<u32>,
    rank: Vec<u8>,
}

impl ParityUnionFind {
    fn new(n: usize) -> ParityUnionFind {
        ParityUnionFind { parent: (0..n as u32).collect(), rank: vec![0; n] }
    }

    /// The root of `x` and `x`'s orientation relative to it.
    fn find(&mut self, mut x: u32) -> (u32, u32) {
        let mut acc = 0;
        loop {
            let px = self.parent[x as usize];
            let p = px & !PARITY;
            if p == x {
                return (x, acc);
            }
            let pp = self.parent[p as usize];
            let g = pp & !PARITY;
            if g == p {
                return (p, acc ^ (px >> 31));
            }
            // x's parity relative to its grandparent, which becomes its parent.
            let bit = (px ^ pp) & PARITY;
            self.parent[x as usize] = g | bit;
            acc ^= bit >> 31;
            x = g;
        }
    }

    /// Records that `a` and `b` differ in orientation by `differ`; false
    /// when that contradicts what is already known.
    fn relate(&mut self, a: u32, b: u32, differ: u32) -> bool {
        let ((ra, pa), (rb, pb)) = (self.find(a), self.find(b));
        if ra == rb {
            return pa ^ pb == differ;
        }
        let (high, low) = if self.rank[ra as usize] >= self.rank[rb as usize] { (ra, rb) } else { (rb, ra) };
        // o(a) = pa ^ o(ra), o(b) = pb ^ o(rb), o(a) ^ o(b) = differ.
        self.parent[low as usize] = high | ((pa ^ pb ^ differ) << 31);
        if self.rank[high as usize] == self.rank[low as usize] {
            self.rank[high as usize] += 1;
        }
        true
    }
}

/// The triangles `0..n` that disagree with their majority winding: per
/// patch (a component over the `pairs`), the smaller of the two orientation
/// classes, the class of the patch's lowest-numbered triangle counting as
/// the majority on a tie. Ascending. `pairs` are the two triangles of every
/// manifold edge and whether they walk it in the same direction (then they
/// disagree); `skip` marks triangles in no patch (collapsed ones).
///
/// `None` when some patch cannot be wound consistently: its classes then
/// depend on the order of a walk, which the caller does.
pub fn flipped(
    n: usize,
    skip: impl Fn(usize) -> bool,
    pairs: impl Iterator<Item = (u32, u32, bool)>,
) -> Option<Vec<u32>> {
    let mut uf = ParityUnionFind::new(n);
    for (a, b, same) in pairs {
        if !uf.relate(a, b, u32::from(same)) {
            return None;
        }
    }
    drop(std::mem::take(&mut uf.rank));
    // Every triangle's root and orientation relative to it, in place.
    for t in 0..n as u32 {
        if !skip(t as usize) {
            let (r, p) = uf.find(t);
            uf.parent[t as usize] = r | (p << 31);
        }
    }
    let mut parent = uf.parent;
    // From here a triangle's slot is read only by itself, except a root's,
    // which holds its patch's balance once the patch is met: class 1 minus
    // class 0 triangles (classes relative to the patch's first triangle,
    // met first in ascending order). Bits mark the roots, the patches met
    // and each patch's base orientation; no array of balances beside the
    // parents (4 bytes a triangle, while the shells are labelled on the
    // other core).
    let (mut is_root, mut met, mut base) = (Bits::new(n), Bits::new(n), Bits::new(n));
    for (t, &p) in parent.iter().enumerate() {
        if !skip(t) && (p & !PARITY) as usize == t {
            is_root.set(t);
        }
    }
    // A triangle's root and its orientation relative to it.
    let place = |parent: &[u32], t: usize| -> (usize, u32) {
        match is_root.get(t) {
            true => (t, 0),
            false => ((parent[t] & !PARITY) as usize, parent[t] >> 31),
        }
    };
    for t in (0..n).filter(|&t| !skip(t)) {
        let (r, p) = place(&parent, t);
        if !met.get(r) {
            met.set(r);
            parent[r] = 0;
            if p == 1 {
                base.set(r);
            }
        }
        let class = p ^ u32::from(base.get(r));
        parent[r] = (parent[r] as i32 + if class == 1 { 1 } else { -1 }) as u32;
    }
    // The minority class: 0 when class 1 has more, else 1 (ties included).
    let minority = |t: usize| {
        let (r, p) = place(&parent, t);
        p ^ u32::from(base.get(r)) == u32::from(parent[r] as i32 <= 0)
    };
    Some((0..n).filter(|&t| !skip(t) && minority(t)).map(|t| t as u32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk this replaces, on pairs: breadth-first from each patch's
    /// lowest triangle, neighbours in the order the pairs list them.
    fn walked(n: usize, skip: &[bool], pairs: &[(u32, u32, bool)]) -> Vec<u32> {
        let mut next: Vec<Vec<(u32, u8)>> = vec![Vec::new(); n];
        for &(a, b, same) in pairs {
            next[a as usize].push((b, same as u8));
            next[b as usize].push((a, same as u8));
        }
        let (mut orientation, mut patch) = (vec![0u8; n], vec![u32::MAX; n]);
        let mut counts = Vec::new();
        for s in 0..n {
            if skip[s] || patch[s] != u32::MAX {
                continue;
            }
            let id = counts.len() as u32;
            counts.push([0u64; 2]);
            patch[s] = id;
            let mut queue = std::collections::VecDeque::from([s]);
            while let Some(t) = queue.pop_front() {
                counts[id as usize][orientation[t] as usize] += 1;
                for &(m, same) in &next[t] {
                    if patch[m as usize] == u32::MAX {
                        patch[m as usize] = id;
                        orientation[m as usize] = orientation[t] ^ same;
                        queue.push_back(m as usize);
                    }
                }
            }
        }
        (0..n)
            .filter(|&t| {
                let p = patch[t];
                p != u32::MAX && orientation[t] == u8::from(counts[p as usize][0] >= counts[p as usize][1])
            })
            .map(|t| t as u32)
            .collect()
    }

    #[test]
    fn parity_agrees_with_the_walk_and_declines_what_it_cannot_decide() {
        use crate::geom::testrng::XorShift;
        let (mut decided, mut declined, mut with_flips) = (0, 0, 0);
        for seed in 1..=400u64 {
            let mut rng = XorShift::new(seed * 0x2545_f491);
            let n = 1 + rng.below(40) as usize;
            let skip: Vec<bool> = (0..n).map(|_| rng.below(8) == 0).collect();
            // Orientations drawn per triangle; each pair mostly agrees
            // with them (a consistent patch), sometimes not (a twist).
            let o: Vec<bool> = (0..n).map(|_| rng.below(2) == 0).collect();
            let twists = rng.below(3) == 0;
            let mut pairs = Vec::new();
            for _ in 0..rng.below(2 * n as u64 + 1) {
                let (a, b) = (rng.below(n as u64) as u32, rng.below(n as u64) as u32);
                if a == b || skip[a as usize] || skip[b as usize] {
                    continue;
                }
                let mut same = o[a as usize] != o[b as usize];
                if twists && rng.below(6) == 0 {
                    same = !same;
                }
                pairs.push((a, b, same));
            }
            match flipped(n, |t| skip[t], pairs.iter().copied()) {
                Some(f) => {
                    assert_eq!(f, walked(n, &skip, &pairs), "seed {seed}");
                    decided += 1;
                    with_flips += usize::from(!f.is_empty());
                }
                None => declined += 1,
            }
        }
        // The draws reach both answers, and flips.
        assert!(decided > 200 && declined > 20 && with_flips > 50, "{decided} {declined} {with_flips}");
    }

    #[test]
    fn a_twisted_band_is_left_to_the_walk() {
        // A ring of four triangles, each agreeing with the next but the
        // last, which closes the ring with a twist.
        let pairs = [(0, 1, false), (1, 2, false), (2, 3, false), (3, 0, true)];
        assert_eq!(flipped(4, |_| false, pairs.into_iter()), None);
        let untwisted = [(0, 1, false), (1, 2, true), (2, 3, false), (3, 0, true)];
        assert_eq!(flipped(4, |_| false, untwisted.into_iter()), Some(vec![2, 3]));
    }

    #[test]
    fn long_chains_keep_their_parities_through_path_halving() {
        // 100,000 triangles in a chain, every other pair walking its edge
        // the same way: classes alternate in pairs along it.
        let n = 100_000u32;
        let pairs = (0..n - 1).map(|t| (t + 1, t, t % 2 == 1));
        let f = flipped(n as usize, |_| false, pairs).unwrap();
        let pairs: Vec<_> = (0..n - 1).map(|t| (t + 1, t, t % 2 == 1)).collect();
        assert_eq!(f, walked(n as usize, &vec![false; n as usize], &pairs));
        assert_eq!(f.len(), n as usize / 2);
    }
}
