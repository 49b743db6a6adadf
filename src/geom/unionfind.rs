//! Union-find (disjoint sets) over `u32` elements, with path halving and
//! union by rank: the weld, the shells, GEO-008's fans, the boundary loops
//! and the UV islands all group with it. [`SharedUnionFind`] takes unions
//! from several threads at once (the weld's walk in parts) and labels its
//! sets in parts.

use super::bits::Bits;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};

/// Union-find with path halving and union by rank, 5 bytes an element (the
/// rank is a byte: it never exceeds log2 of the element count). Which
/// elements end up together, and so [`UnionFind::labels`], do not depend on
/// how the trees are linked.
#[derive(Debug, Clone)]
pub struct UnionFind {
    parent: Vec<u32>,
    rank: Vec<u8>,
}

impl UnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> UnionFind {
        UnionFind { parent: (0..n as u32).collect(), rank: vec![0; n] }
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
    /// Component labels 0..k, numbered in order of each component's first
    /// element, and k: [`UnionFind::into_labels`] with nothing left out.
    pub fn labels(self) -> (Vec<u32>, usize) {
        self.into_labels(|_| false)
    }

    /// Component labels 0..k, numbered in order of each component's first
    /// element not left out, and k; the elements `skip` leaves out, which
    /// must never have been joined to another, get `u32::MAX`.
    ///
    /// Written over the parent array, so the labels take no memory beside
    /// it (a label array and a per-root array took 8 bytes an element
    /// more: the shells' and the weld's largest moment). Every element is
    /// first pointed straight at its root; from then on an element's slot
    /// is read only by itself, except a root's, which every member reads
    /// and which holds its component's label once met (bits mark the roots
    /// and the roots labelled).
    pub fn into_labels(mut self, skip: impl Fn(usize) -> bool) -> (Vec<u32>, usize) {
        drop(std::mem::take(&mut self.rank));
        let n = self.parent.len();
        for i in 0..n as u32 {
            let r = self.find(i);
            self.parent[i as usize] = r;
        }
        let mut parent = self.parent;
        let mut root = Bits::new(n);
        for (i, &p) in parent.iter().enumerate() {
            if p as usize == i {
                root.set(i);
            }
        }
        let mut labelled = Bits::new(n);
        let mut k = 0u32;
        for i in 0..n {
            if skip(i) {
                debug_assert!(root.get(i), "a left-out element was joined");
                parent[i] = u32::MAX;
                continue;
            }
            let r = if root.get(i) { i } else { parent[i] as usize };
            if !labelled.get(r) {
                labelled.set(r);
                parent[r] = k;
                k += 1;
            }
            parent[i] = parent[r];
        }
        (parent, k as usize)
    }
}

/// A union-find that several threads join into at once: a root is
/// always linked under a smaller element (its parent stays below it, so no
/// link makes a cycle), by a compare-and-swap that fails if the root was
/// linked meanwhile (the union then starts again from the new roots), and
/// paths are halved as they are walked. 4 bytes an element. The sets, and
/// so [`SharedUnionFind::labels`], do not depend on how the threads' unions
/// interleave.
#[derive(Debug)]
pub struct SharedUnionFind {
    parent: Vec<AtomicU32>,
}

impl SharedUnionFind {
    /// `n` singletons.
    pub fn new(n: usize) -> SharedUnionFind {
        SharedUnionFind { parent: (0..n as u32).map(AtomicU32::new).collect() }
    }

    /// The representative of `x` when it is read (another thread may link
    /// it under another at any time).
    fn find(&self, mut x: u32) -> u32 {
        loop {
            let p = self.parent[x as usize].load(Ordering::Relaxed);
            if p == x {
                return x;
            }
            let g = self.parent[p as usize].load(Ordering::Relaxed);
            if g != p {
                // Halving: x skips to its grandparent, which is below its
                // parent; losing the race to another write changes nothing.
                let _ = self.parent[x as usize].compare_exchange(p, g, Ordering::Relaxed, Ordering::Relaxed);
            }
            x = g;
        }
    }

    /// Joins the sets of `a` and `b`.
    pub fn union(&self, a: u32, b: u32) {
        let (mut a, mut b) = (a, b);
        loop {
            let (ra, rb) = (self.find(a), self.find(b));
            if ra == rb {
                return;
            }
            let (high, low) = if ra > rb { (ra, rb) } else { (rb, ra) };
            // Linked only if `high` is still a root.
            if self.parent[high as usize].compare_exchange(high, low, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                return;
            }
            (a, b) = (ra, rb);
        }
    }

    /// [`UnionFind::labels`] of the sets joined (every thread's unions
    /// done: the caller holds it whole again).
    pub fn labels(self) -> (Vec<u32>, usize) {
        self.into_labels(|_| false)
    }

    /// How many sets [`SharedUnionFind::into_labels`] would label (every
    /// thread's unions done), `skip` leaving out elements never joined: its
    /// roots not left out, counted on the pool without labelling anything
    /// (a pass over the parents, where labelling writes every element).
    pub fn count_sets(&self, skip: impl Fn(usize) -> bool + Sync) -> usize {
        self.parent.par_iter().enumerate().filter(|&(i, p)| p.load(Ordering::Relaxed) as usize == i && !skip(i)).count()
    }

    /// [`UnionFind::into_labels`] of the sets joined (every thread's
    /// unions done), `skip` leaving out elements never joined.
    ///
    /// In parts on the pool from [`PARALLEL_FROM`] elements (UV-005's
    /// 1.3M triangles and the weld's 650,000 points on s13, each labelled
    /// in one pass on one thread while the other core waited; with large
    /// prefaults in parts too, UV-005 took 47.0 ms against 54.2, medians
    /// of nine interleaved runs, BENCHMARKS.md "Twenty-ninth step"), over
    /// the parent array as the plain labelling is. It rests on what a shared root is: a root is only
    /// ever linked under a smaller element, so every set's root is its
    /// smallest element, the one whose label the plain labelling numbers
    /// it by (each set in order of its first element). A set's label is
    /// then the number of labelled roots before its root: each part counts
    /// its own, and the counts added up give each part its first label.
    ///
    /// [`PARALLEL_FROM`]: crate::geom::parts::PARALLEL_FROM
    pub fn into_labels(self, skip: impl Fn(usize) -> bool + Sync) -> (Vec<u32>, usize) {
        let parts = crate::geom::parts::parts_for(self.parent.len());
        self.labels_in_parts(skip, parts)
    }

    /// [`SharedUnionFind::into_labels`] in `parts` parts (1 or more).
    fn labels_in_parts(self, skip: impl Fn(usize) -> bool + Sync, parts: usize) -> (Vec<u32>, usize) {
        let n = self.parent.len();
        if parts <= 1 {
            let parent: Vec<u32> = self.parent.into_iter().map(AtomicU32::into_inner).collect();
            // The same forest as a plain union-find's; labelling reads only
            // the parents (ranks matter only to further unions, and there
            // are none).
            return UnionFind { parent, rank: Vec::new() }.into_labels(skip);
        }
        let ranges = crate::geom::parts::ranges(n, parts, 64);
        let parent = &self.parent;
        let load = |x: usize| parent[x].load(Ordering::Relaxed);
        // Every element pointed straight at its root, each part writing its
        // own elements' slots (another part's find may read them: a parent
        // or the root, both ancestors, so it finds the same root; its
        // halving writes an ancestor too, and never once the slot holds the
        // root). The roots are marked, each part in words of its own, and
        // each part counts its roots that are labelled.
        let mut roots = vec![0u64; n.div_ceil(64)];
        let counts: Vec<u32> = ranges
            .par_iter()
            .zip(crate::geom::parts::flag_words(&mut roots, &ranges))
            .map(|(range, words)| {
                let mut labelled = 0u32;
                for x in range.clone() {
                    let r = self.find(x as u32);
                    if r as usize == x {
                        words[(x - range.start) / 64] |= 1 << (x % 64);
                        labelled += u32::from(!skip(x));
                    } else {
                        debug_assert!(!skip(x), "a left-out element was joined");
                        parent[x].store(r, Ordering::Relaxed);
                    }
                }
                labelled
            })
            .collect();
        let roots = Bits::from_words(roots, n);
        let root = |x: usize| roots.get(x);
        let firsts: Vec<u32> = counts.iter().scan(0u32, |at, &c| Some(std::mem::replace(at, *at + c))).collect();
        // The roots' slots take their labels, then every other element
        // reads its root's: a root's slot is no longer written by then.
        ranges.par_iter().zip(&firsts).for_each(|(range, &first)| {
            let mut k = first;
            for x in range.clone().filter(|&x| root(x)) {
                let label = if skip(x) {
                    u32::MAX
                } else {
                    k += 1;
                    k - 1
                };
                parent[x].store(label, Ordering::Relaxed);
            }
        });
        ranges.par_iter().for_each(|range| {
            for x in range.clone().filter(|&x| !root(x)) {
                parent[x].store(load(load(x) as usize), Ordering::Relaxed);
            }
        });
        let count = counts.iter().map(|&c| c as usize).sum();
        (self.parent.into_iter().map(AtomicU32::into_inner).collect(), count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Components by flood fill over the joined pairs, labelled like
    /// [`UnionFind::labels`].
    fn flood(n: usize, pairs: &[(u32, u32)]) -> Vec<u32> {
        let mut next = vec![Vec::new(); n];
        for &(a, b) in pairs {
            next[a as usize].push(b);
            next[b as usize].push(a);
        }
        let mut label = vec![u32::MAX; n];
        let mut k = 0;
        for s in 0..n {
            if label[s] != u32::MAX {
                continue;
            }
            let mut stack = vec![s as u32];
            label[s] = k;
            while let Some(v) = stack.pop() {
                for &w in &next[v as usize] {
                    if label[w as usize] == u32::MAX {
                        label[w as usize] = k;
                        stack.push(w);
                    }
                }
            }
            k += 1;
        }
        label
    }

    #[test]
    fn shared_unions_from_several_threads_find_the_components() {
        use rayon::prelude::*;
        let mut rng = crate::geom::testrng::XorShift::new(0x51ed_2701_9a3c_44b1);
        for n in [1u32, 2, 10, 1000, 50_000] {
            // Pairs mostly close together (long chains, as a weld's seams
            // make) and some anywhere (sets merging across the threads).
            let mut pairs = Vec::new();
            for i in 0..n {
                let b = if rng.below(8) == 0 { rng.below(u64::from(n)) as u32 } else { (i + 1).min(n - 1) };
                if rng.below(3) != 0 {
                    pairs.push((i, b));
                }
            }
            let want = flood(n as usize, &pairs);
            let shared = SharedUnionFind::new(n as usize);
            pairs.par_chunks(97).for_each(|c| c.iter().for_each(|&(a, b)| shared.union(a, b)));
            let (labels, k) = shared.labels();
            assert_eq!(labels, want, "n = {n}");
            assert_eq!(k, want.iter().map(|&l| l as usize + 1).max().unwrap_or(0));
            // Leaving out the elements in no pair, as a plain union-find does.
            let paired: std::collections::HashSet<u32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
            let skip = |i: usize| !paired.contains(&(i as u32));
            let (shared, mut plain) = (SharedUnionFind::new(n as usize), UnionFind::new(n as usize));
            pairs.par_chunks(97).for_each(|c| c.iter().for_each(|&(a, b)| shared.union(a, b)));
            pairs.iter().for_each(|&(a, b)| _ = plain.union(a, b));
            let counted = shared.count_sets(skip);
            let (labels, k) = shared.into_labels(skip);
            assert_eq!(counted, k, "n = {n}: the sets counted are those labelled");
            assert_eq!((labels, k), plain.into_labels(skip), "n = {n}, left out");
        }
    }

    #[test]
    fn shared_labels_in_parts_are_the_plain_labels() {
        use rayon::prelude::*;
        // Sets whose smallest element lies in another part than most of
        // its members (pairs reaching anywhere), chains across the parts'
        // bounds, and elements left out; every part count gives the plain
        // union-find's labels, with and without elements left out.
        let mut rng = crate::geom::testrng::XorShift::new(0x0dd5_ba11_7e57_ab1e);
        for n in [1u32, 63, 64, 65, 1000, 70_000] {
            let mut pairs = Vec::new();
            for i in 0..n {
                let b = if rng.below(4) == 0 { rng.below(u64::from(n)) as u32 } else { (i + 1).min(n - 1) };
                if rng.below(3) != 0 {
                    pairs.push((i, b));
                }
            }
            let paired: std::collections::HashSet<u32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
            let skip = |i: usize| !paired.contains(&(i as u32));
            let mut plain = UnionFind::new(n as usize);
            pairs.iter().for_each(|&(a, b)| _ = plain.union(a, b));
            let (want, want_left_out) = (plain.clone().labels(), plain.into_labels(skip));
            for parts in 1..=4 {
                let joined = || {
                    let shared = SharedUnionFind::new(n as usize);
                    pairs.par_chunks(97).for_each(|c| c.iter().for_each(|&(a, b)| shared.union(a, b)));
                    shared
                };
                assert_eq!(joined().labels_in_parts(|_| false, parts), want, "n = {n}, {parts} parts");
                assert_eq!(joined().labels_in_parts(skip, parts), want_left_out, "n = {n}, {parts} parts, left out");
            }
        }
    }

    #[test]
    fn labels_are_the_connected_components() {
        let mut rng = crate::geom::testrng::XorShift::new(0x2545_f491_4f6c_dd1du64);
        let mut rnd = move |n: u32| rng.below(u64::from(n)) as u32;
        for n in [1u32, 2, 10, 1000] {
            let pairs: Vec<(u32, u32)> = (0..n).map(|_| (rnd(n), rnd(n))).collect();
            let mut uf = UnionFind::new(n as usize);
            let mut joined = 0;
            for &(a, b) in &pairs {
                joined += uf.union(a, b) as usize;
            }
            let want = flood(n as usize, &pairs);
            let (labels, k) = uf.clone().labels();
            assert_eq!(labels, want, "n = {n}");
            // Every successful union removed one component.
            assert_eq!(k, n as usize - joined);
            // Left out: elements never joined (here, those in no pair), with
            // the rest numbered as their components' first elements come.
            let paired: std::collections::HashSet<u32> = pairs.iter().flat_map(|&(a, b)| [a, b]).collect();
            let (kept, kk) = uf.into_labels(|i| !paired.contains(&(i as u32)));
            let mut names = std::collections::HashMap::new();
            let want: Vec<u32> = (0..n)
                .map(|i| match paired.contains(&i) {
                    true => {
                        let next = names.len() as u32;
                        *names.entry(want[i as usize]).or_insert(next)
                    }
                    false => u32::MAX,
                })
                .collect();
            assert_eq!(kept, want, "n = {n}, left out");
            assert_eq!(kk, names.len());
        }
    }

    #[test]
    fn labels_are_right_whichever_way_the_trees_were_linked() {
        // Roots above and below their members, chains, a left-out element
        // between members: the in-place labelling reads a root's slot once
        // it holds the label, before and after the root itself is reached.
        let mut uf = UnionFind::new(8);
        for (a, b) in [(0, 7), (6, 5), (5, 1), (2, 4)] {
            uf.union(a, b);
        }
        assert_eq!(uf.clone().labels(), (vec![0, 1, 2, 3, 2, 1, 1, 0], 4));
        assert_eq!(uf.into_labels(|i| i == 3), (vec![0, 1, 2, u32::MAX, 2, 1, 1, 0], 3));
    }

    #[test]
    fn ranks_fit_a_byte() {
        // A chain of unions of equal-rank trees: the rank grows as log2(n).
        let n = 1u32 << 16;
        let mut uf = UnionFind::new(n as usize);
        let mut step = 1;
        while step < n {
            for a in (0..n).step_by(2 * step as usize) {
                uf.union(a, a + step);
            }
            step *= 2;
        }
        assert!(uf.rank.iter().all(|&r| r <= 16));
        assert_eq!(uf.labels().1, 1);
    }
}
