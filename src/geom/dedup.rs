//! Distinct vertices over several attribute streams, compared bit for bit
//! ([`distinct_vertices`]): the count meshoptimizer's
//! `meshopt_generateVertexRemapMulti` gives with no index buffer (PERF-006's
//! duplicate vertices), without its per-probe `memcmp` of every stream.

/// Words of one attribute stream: `words.len() / vertices` 32-bit words a
/// vertex (a `[f32; 3]` position is 3), read as bits, so that 0.0 and -0.0
/// differ and a NaN equals only the same NaN, as a byte compare would.
#[derive(Debug, Clone, Copy)]
pub struct Stream<'a> {
    words: &'a [u32],
    width: usize,
}

impl<'a> Stream<'a> {
    /// A stream of `N`-component f32 vectors.
    pub fn of<const N: usize>(v: &'a [[f32; N]]) -> Stream<'a> {
        Stream { words: bytemuck::cast_slice(v), width: N }
    }

    #[inline(always)]
    fn vertex(&self, i: usize) -> &'a [u32] {
        &self.words[i * self.width..(i + 1) * self.width]
    }
}

/// How many of the first `n` vertices are distinct, where two vertices are
/// the same when every stream holds the same bits for both. Every stream
/// must hold at least `n` vertices.
///
/// One pass over the vertices into an open-addressed table, at most two
/// thirds full, whose slots hold a vertex's index (plus one) with a tag of
/// its hash above it: a probe compares the vertices themselves only when
/// the tags agree, which is all but never for two different vertices. Below
/// 2^24 vertices a slot is 32 bits (the index in the low bits, a tag of at
/// least 8 bits above), from there 64 (a 32-bit tag): the table takes 2.7
/// to 5.3 bytes a vertex, not 5.3 to 10.7 (8 MB of PERF-006's memory on a
/// 32 MB GLB's 560,000 vertices, held beside the first phase's chain, and
/// half the cache misses). O(n) time.
pub fn distinct_vertices(n: usize, streams: &[Stream<'_>]) -> usize {
    if n == 0 {
        return 0;
    }
    assert!(n < u32::MAX as usize, "at most 2^32 - 2 vertices");
    assert!(streams.iter().all(|s| s.words.len() >= n * s.width), "every stream holds n vertices");
    if n < 1 << 24 { count_distinct::<u32>(n, streams) } else { count_distinct::<u64>(n, streams) }
}

/// A table slot: 0 is empty, otherwise `tag << index_bits | (index + 1)`.
trait Slot: Copy + Eq {
    const BITS: u32;
    fn from_u64(v: u64) -> Self;
    fn to_u64(self) -> u64;
}

impl Slot for u32 {
    const BITS: u32 = 32;
    #[inline(always)]
    fn from_u64(v: u64) -> u32 {
        v as u32
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        u64::from(self)
    }
}

impl Slot for u64 {
    const BITS: u32 = 64;
    #[inline(always)]
    fn from_u64(v: u64) -> u64 {
        v
    }
    #[inline(always)]
    fn to_u64(self) -> u64 {
        self
    }
}

/// [`distinct_vertices`] with slots of `S` (wide enough for `n` + 1 in
/// its index bits and a tag of at least 8 bits).
fn count_distinct<S: Slot>(n: usize, streams: &[Stream<'_>]) -> usize {
    // Index bits: enough for n (indices are stored plus one); at least 32
    // in a 64-bit slot, so that its tag keeps its 32 bits.
    let index_bits = (usize::BITS - n.leading_zeros()).max(S::BITS.saturating_sub(32));
    let tag_bits = S::BITS - index_bits;
    debug_assert!(tag_bits >= 8, "a tag of at least 8 bits");
    let index_mask = (1u64 << index_bits) - 1;
    let bits = (n + n / 2).next_power_of_two().trailing_zeros().max(4);
    let mask = (1usize << bits) - 1;
    let mut table = vec![S::from_u64(0); 1 << bits];
    // Every page of it is probed, most read before they are written.
    crate::memory::prefault(&mut table);
    let same = |a: usize, b: usize| streams.iter().all(|s| s.vertex(a) == s.vertex(b));
    let mut distinct = 0;
    // The table is far larger than the caches: each block's slots are
    // hashed and fetched first, so that their misses overlap, then probed
    // in vertex order (the same table as one vertex at a time).
    use crate::geom::prefetch::{BLOCK, prefetch};
    let mut hashes = [0u64; BLOCK];
    for start in (0..n).step_by(BLOCK) {
        let block = start..(start + BLOCK).min(n);
        for (h, i) in hashes.iter_mut().zip(block.clone()) {
            *h = hash(streams, i);
            prefetch(&table[(*h >> (64 - bits)) as usize]);
        }
        for (&h, i) in hashes.iter().zip(block) {
            // The tag from the hash's low bits (the slot comes from its high ones).
            let tag = (h & ((1u64 << tag_bits) - 1)) << index_bits;
            let mut slot = (h >> (64 - bits)) as usize;
            loop {
                let e = table[slot].to_u64();
                if e == 0 {
                    table[slot] = S::from_u64(tag | (i as u64 + 1));
                    distinct += 1;
                    break;
                }
                if e & !index_mask == tag && same(((e & index_mask) - 1) as usize, i) {
                    break;
                }
                slot = (slot + 1) & mask;
            }
        }
    }
    distinct
}

/// A 64-bit hash of vertex `i` over every stream's words (a multiply-rotate
/// mix per word, then a final avalanche, so that both the high bits, which
/// pick the slot, and the low bits, the tag, depend on every word).
#[inline(always)]
fn hash(streams: &[Stream<'_>], i: usize) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = 0u64;
    for s in streams {
        for &w in s.vertex(i) {
            h = (h ^ w as u64).wrapping_mul(K).rotate_left(29);
        }
    }
    h ^= h >> 32;
    h = h.wrapping_mul(0xd6e8_feb8_6659_fd93);
    h ^ (h >> 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::testrng::XorShift as Rng;

    /// meshoptimizer's count on the same streams: the reference.
    fn meshopt_distinct(n: usize, pos: &[[f32; 3]], uv: &[[f32; 2]]) -> usize {
        let streams = [meshopt::VertexStream::new(pos.as_ptr()), meshopt::VertexStream::new(uv.as_ptr())];
        meshopt::generate_vertex_remap_multi(n, &streams, None).0
    }

    #[test]
    fn agrees_with_meshoptimizer_on_random_vertices_with_many_duplicates() {
        let mut rng = Rng::new(7);
        // Values from a small pool, so that duplicates are frequent, with
        // 0.0 and -0.0 and a NaN among them (bits, not values, compare).
        let pool = [0.0f32, -0.0, 1.0, 0.5, f32::NAN, 2.0, -1.0];
        for round in 0..40 {
            let n = 1 + rng.below(if round < 30 { 300 } else { 20_000 }) as usize;
            let pick = |rng: &mut Rng| pool[rng.below(pool.len() as u64) as usize];
            let pos: Vec<[f32; 3]> = (0..n).map(|_| [pick(&mut rng), pick(&mut rng), pick(&mut rng)]).collect();
            let uv: Vec<[f32; 2]> = (0..n).map(|_| [pick(&mut rng), pick(&mut rng)]).collect();
            let ours = distinct_vertices(n, &[Stream::of(&pos), Stream::of(&uv)]);
            assert_eq!(ours, meshopt_distinct(n, &pos, &uv), "round {round}, {n} vertices");
        }
    }

    #[test]
    fn bits_not_values() {
        let pos = [[0.0f32, 0.0, 0.0], [-0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [f32::NAN; 3], [f32::NAN; 3]];
        assert_eq!(distinct_vertices(5, &[Stream::of(&pos)]), 3);
        // Only the first n vertices count; a second stream splits them.
        let uv = [[0.0f32, 0.0], [0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [0.0, 0.0]];
        assert_eq!(distinct_vertices(3, &[Stream::of(&pos), Stream::of(&uv)]), 3);
        assert_eq!(distinct_vertices(0, &[Stream::of(&pos)]), 0);
    }

    #[test]
    fn both_slot_widths_count_alike() {
        // The 64-bit slots serve 2^24 vertices and more; here both widths
        // count the same streams, duplicates and tag clashes included.
        let mut rng = Rng::new(11);
        let pool = [0.0f32, -0.0, 1.0, 0.5, f32::NAN];
        for round in 0..20 {
            let n = 1 + rng.below(if round < 10 { 50 } else { 50_000 }) as usize;
            let pick = |rng: &mut Rng| pool[rng.below(pool.len() as u64) as usize];
            let pos: Vec<[f32; 3]> = (0..n).map(|_| [pick(&mut rng), pick(&mut rng), pick(&mut rng)]).collect();
            let uv: Vec<[f32; 2]> = (0..n).map(|_| [pick(&mut rng), pick(&mut rng)]).collect();
            let streams = [Stream::of(&pos), Stream::of(&uv)];
            let want = meshopt_distinct(n, &pos, &uv);
            assert_eq!(count_distinct::<u32>(n, &streams), want, "round {round}, 32-bit slots");
            assert_eq!(count_distinct::<u64>(n, &streams), want, "round {round}, 64-bit slots");
        }
    }

    #[test]
    fn all_the_same_and_all_different() {
        let same = vec![[1.5f32, 2.5, 3.5]; 10_000];
        assert_eq!(distinct_vertices(same.len(), &[Stream::of(&same)]), 1);
        let grid: Vec<[f32; 3]> = (0..100_000).map(|i| [(i % 317) as f32, (i / 317) as f32, 0.0]).collect();
        assert_eq!(distinct_vertices(grid.len(), &[Stream::of(&grid)]), 100_000);
    }
}
