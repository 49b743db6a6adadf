//! How many parts a pass over many items is split into on the thread pool
//! ([`parts_for`]): the weld's walk over its cells joins from each part
//! into one shared union-find. And the pieces of a counting sort in parts
//! (the edge map's and UV-005's buckets): the parts' ranges ([`ranges`])
//! and a pass over them ([`map`]),
//! their counts turned into where each part writes
//! ([`positions_from_counts`]), and arrays every part writes places of
//! its own in ([`shared_u32s`], [`shared_u64s`]).

use std::ops::Range;
use std::sync::atomic::{AtomicU32, AtomicU64};

/// From this many items, a pass is split into parts (below it, one part:
/// the split's fixed costs would outweigh it).
pub const PARALLEL_FROM: usize = 1 << 16;

/// The most parts: past the two cores measured, a part's fixed costs (its
/// cursors' first look-ups) are not known to pay.
pub const MAX_PARTS: usize = 4;

/// Parts for `items` items: the pool's threads, at most [`MAX_PARTS`];
/// one below [`PARALLEL_FROM`].
pub fn parts_for(items: usize) -> usize {
    if items < PARALLEL_FROM { 1 } else { rayon::current_num_threads().clamp(1, MAX_PARTS) }
}

/// `0..n` in `parts` ranges (1 or more), in order and about equal, each
/// but the last starting on a multiple of `align`.
pub fn ranges(n: usize, parts: usize, align: usize) -> Vec<Range<usize>> {
    let parts = parts.max(1);
    let start = |i: usize| if i == parts { n } else { (n * i / parts) / align * align };
    (0..parts).map(|i| start(i)..start(i + 1)).collect()
}

/// `f` over `0..n` cut into [`parts_for`]`(n)` [`ranges`], the parts side
/// by side on the pool; the results in the ranges' order.
pub fn map<T: Send>(n: usize, f: impl Fn(Range<usize>) -> T + Sync + Send) -> Vec<T> {
    use rayon::prelude::*;
    ranges(n, parts_for(n), 1).into_par_iter().map(f).collect()
}

/// Turns every part's counts per bucket (all the same length) into the
/// place its first entry of each bucket goes: the buckets in order, and
/// within a bucket the parts in order, so that parts over consecutive
/// ranges lay their entries out as one sequential pass would. Returns the
/// entries in all. Once each part has written its entries (advancing its
/// places), the last part's places are every bucket's end.
pub fn positions_from_counts(counts: &mut [Vec<u32>]) -> u32 {
    let buckets = counts.first().map_or(0, Vec::len);
    let mut at = 0u32;
    for b in 0..buckets {
        for count in counts.iter_mut() {
            let n = count[b];
            count[b] = at;
            at += n;
        }
    }
    at
}

/// `items` split into consecutive pieces of `lengths`, in order, so that
/// each part of a pass in parts writes a piece of its own; the items past
/// the last piece are left out. Panics when the lengths add up to more
/// than `items` holds.
pub fn split_by_lengths<T>(mut items: &mut [T], lengths: impl IntoIterator<Item = usize>) -> Vec<&mut [T]> {
    let lengths = lengths.into_iter();
    let mut pieces = Vec::with_capacity(lengths.size_hint().0);
    for len in lengths {
        let (head, tail) = std::mem::take(&mut items).split_at_mut(len);
        items = tail;
        pieces.push(head);
    }
    pieces
}

/// The words of a bit-a-item array (`words`, item i at bit i % 64 of word
/// i / 64) that each of `ranges` owns, so that each part sets its items'
/// bits in words of its own: the ranges must be in order and (but the
/// last) end on multiples of 64, as [`ranges`] gives them with `align` 64.
pub fn flag_words<'a>(words: &'a mut [u64], ranges: &[Range<usize>]) -> Vec<&'a mut [u64]> {
    split_by_lengths(words, ranges.iter().map(|r| r.end.div_ceil(64) - r.start / 64))
}

/// A slice of `u32` as atomics, so that several threads may each write
/// places of their own in it (a relaxed store is a plain store).
pub fn shared_u32s(words: &mut [u32]) -> &[AtomicU32] {
    const _: () = assert!(std::mem::align_of::<AtomicU32>() == std::mem::align_of::<u32>());
    // SAFETY: AtomicU32 has the size and bit validity of u32, and (checked
    // above) its alignment; the slice is borrowed mutably, so nothing else
    // reads or writes it while the atomics are in use.
    unsafe { &*(words as *mut [u32] as *const [AtomicU32]) }
}

/// A slice of `u64` as atomics, so that several threads may each write
/// places of their own in it (a relaxed store is a plain store).
pub fn shared_u64s(words: &mut [u64]) -> &[AtomicU64] {
    const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());
    // SAFETY: AtomicU64 has the size and bit validity of u64, and (checked
    // above) its alignment; the slice is borrowed mutably, so nothing else
    // reads or writes it while the atomics are in use.
    unsafe { &*(words as *mut [u64] as *const [AtomicU64]) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_by_lengths_are_the_slices_one_after_another() {
        let mut items: Vec<u32> = (0..10).collect();
        let pieces = split_by_lengths(&mut items, [3, 0, 4]);
        let got: Vec<Vec<u32>> = pieces.into_iter().map(|p| p.to_vec()).collect();
        assert_eq!(got, vec![vec![0, 1, 2], vec![], vec![3, 4, 5, 6]]);
        // Each piece writes its own items; those past the last are left.
        for (k, piece) in split_by_lengths(&mut items, [2, 5]).into_iter().enumerate() {
            piece.iter_mut().for_each(|x| *x = 100 + k as u32);
        }
        assert_eq!(items, [100, 100, 101, 101, 101, 101, 101, 7, 8, 9]);
        assert!(split_by_lengths(&mut items, []).is_empty());
        let too_long = std::panic::catch_unwind(move || split_by_lengths(&mut items, [6, 5]).len());
        assert!(too_long.is_err(), "more than the items hold");
    }

    #[test]
    fn counts_in_parts_lay_entries_out_as_one_pass() {
        // Items with buckets, counted and written in 1-4 parts, give the
        // buckets one sequential counting sort gives (items in order within
        // each), and the last part's places end up at the buckets' ends.
        let mut rng = crate::geom::testrng::XorShift::new(0x09a1_17e5);
        let items: Vec<u32> = (0..1000).map(|_| rng.below(37) as u32).collect();
        let mut want: Vec<usize> = (0..items.len()).collect();
        want.sort_by_key(|&i| items[i]);
        for parts in 1..=4 {
            let ranges = ranges(items.len(), parts, 64);
            assert_eq!(ranges.iter().map(|r| r.len()).sum::<usize>(), items.len());
            assert!(ranges.iter().all(|r| r.start.is_multiple_of(64)));
            let mut counts = vec![vec![0u32; 37]; parts];
            for (r, count) in ranges.iter().zip(&mut counts) {
                r.clone().for_each(|i| count[items[i] as usize] += 1);
            }
            assert_eq!(positions_from_counts(&mut counts), items.len() as u32);
            let mut out = vec![0u64; items.len()];
            let shared = shared_u64s(&mut out);
            for (r, fill) in ranges.iter().zip(&mut counts) {
                for i in r.clone() {
                    let at = &mut fill[items[i] as usize];
                    shared[*at as usize].store(i as u64, std::sync::atomic::Ordering::Relaxed);
                    *at += 1;
                }
            }
            assert_eq!(out.iter().map(|&i| i as usize).collect::<Vec<_>>(), want, "{parts} parts");
            let ends: Vec<u32> = (0..37u32).map(|b| items.iter().filter(|&&x| x <= b).count() as u32).collect();
            assert_eq!(counts.last().unwrap(), &ends);
        }
    }

    #[test]
    fn flag_words_give_each_part_the_words_of_its_items() {
        for (n, parts) in [(0usize, 1usize), (64, 2), (1000, 3), (130, 4)] {
            let ranges = ranges(n, parts, 64);
            let mut words = vec![0u64; n.div_ceil(64)];
            for (range, part) in ranges.iter().zip(flag_words(&mut words, &ranges)) {
                assert_eq!(part.len(), range.end.div_ceil(64) - range.start / 64, "{n} in {parts}");
                range.clone().for_each(|i| part[(i - range.start) / 64] |= 1 << (i % 64));
            }
            // Every item's bit set once, where one array would hold it.
            assert_eq!(words.iter().map(|w| w.count_ones() as usize).sum::<usize>(), n);
            assert!((0..n).all(|i| words[i / 64] >> (i % 64) & 1 == 1));
        }
    }

    #[test]
    fn small_inputs_stay_in_one_part() {
        assert_eq!(parts_for(PARALLEL_FROM - 1), 1);
        assert!((1..=MAX_PARTS).contains(&parts_for(PARALLEL_FROM)));
    }
}
