//! How many parts a pass over many items is split into on the thread pool
//! ([`parts_for`]): the weld's walk over its cells joins from each part
//! into one shared union-find.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_inputs_stay_in_one_part() {
        assert_eq!(parts_for(PARALLEL_FROM - 1), 1);
        assert!((1..=MAX_PARTS).contains(&parts_for(PARALLEL_FROM)));
    }
}
