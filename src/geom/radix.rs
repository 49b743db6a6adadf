//! A least-significant-digit radix sort of `u64`s on a range of their bits,
//! in parts on the thread pool ([`sort_bits`]): the weld's (cell, point)
//! keys, sorted in a few linear passes instead of a comparison sort's
//! twenty levels.

use crate::geom::parts::{self, parts_for, positions_from_counts, shared_u64s};
use rayon::prelude::*;
use std::sync::atomic::Ordering::Relaxed;

/// Bits of one digit: 2,048 buckets, whose counts (8 KiB a part) and
/// write cursors stay in the first-level cache.
pub const DIGIT_BITS: u32 = 11;

/// `values` sorted stably by their bits `lo..hi` (`lo <= hi <= 64`), one
/// digit of at most [`DIGIT_BITS`] bits a pass, least significant first.
/// When the values' bits below `lo` are already in ascending order and
/// their bits from `hi` up are all zero, the result is `values` sorted
/// (what the weld does: the point's number below, its cell above).
///
/// Each pass counts each part's digits, turns the counts into where each
/// part writes ([`positions_from_counts`]: a digit's entries in part
/// order, so in the order of the pass before), and scatters, each part on
/// a thread of its own; the passes alternate between `values` and one
/// buffer of the same length.
pub fn sort_bits(values: Vec<u64>, lo: u32, hi: u32) -> Vec<u64> {
    assert!(lo <= hi && hi <= 64, "bits {lo}..{hi} of a u64");
    let n = values.len();
    let width = hi - lo;
    if n < 2 || width == 0 {
        return values;
    }
    let passes = width.div_ceil(DIGIT_BITS);
    // Digits of equal width, at most DIGIT_BITS each.
    let digit = width.div_ceil(passes);
    let parts = parts_for(n);
    let ranges = parts::ranges(n, parts, 1);
    let mut from = values;
    let mut to = vec![0u64; n];
    for pass in 0..passes {
        let shift = lo + pass * digit;
        let bits = digit.min(hi - shift);
        let mask = (1u64 << bits) - 1;
        let bucket = |v: u64| ((v >> shift) & mask) as usize;
        let mut counts: Vec<Vec<u32>> = ranges
            .par_iter()
            .map(|r| {
                let mut count = vec![0u32; 1 << bits];
                from[r.clone()].iter().for_each(|&v| count[bucket(v)] += 1);
                count
            })
            .collect();
        positions_from_counts(&mut counts);
        let shared = shared_u64s(&mut to);
        let src = &from;
        ranges.par_iter().zip(counts.par_iter_mut()).for_each(|(r, at)| {
            for &v in &src[r.clone()] {
                let place = &mut at[bucket(v)];
                shared[*place as usize].store(v, Relaxed);
                *place += 1;
            }
        });
        std::mem::swap(&mut from, &mut to);
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::testrng::XorShift;

    #[test]
    fn sorted_by_the_bits_asked_and_stable() {
        let mut rng = XorShift::new(0x5eed_0a11);
        for (n, lo, hi) in
            [(0usize, 0u32, 64u32), (1, 3, 9), (1000, 0, 64), (5000, 20, 42), (70_000, 12, 45), (3000, 8, 8)]
        {
            let values: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            let key = |v: u64| if hi == lo { 0 } else { (v >> lo) & (u64::MAX >> (64 - (hi - lo))) };
            let mut want = values.clone();
            // A stable sort by the bits alone: ties keep their order.
            want.sort_by_key(|&v| key(v));
            assert_eq!(sort_bits(values, lo, hi), want, "{n} values, bits {lo}..{hi}");
        }
    }

    #[test]
    fn numbers_below_in_order_and_nothing_above_sort_whole_values() {
        // The weld's layout: a key above the value's index, 0..n in order.
        let mut rng = XorShift::new(0x0dd_ba11);
        for (n, key_bits) in [(100usize, 3u32), (65_536, 20), (90_000, 41), (200_000, 44)] {
            let id_bits = 64 - (n as u64 - 1).leading_zeros();
            let values: Vec<u64> = (0..n as u64).map(|i| (rng.next_u64() >> (64 - key_bits)) << id_bits | i).collect();
            let mut want = values.clone();
            want.sort_unstable();
            assert_eq!(sort_bits(values, id_bits, id_bits + key_bits), want, "{n} values, {key_bits}-bit keys");
        }
    }
}
