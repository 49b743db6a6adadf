//! A packed set of flags ([`Bits`]): a bit an item where a `Vec<bool>`
//! takes a byte, for per-triangle flags held through a large mesh's checks
//! (the degenerate flags).

/// Flags `0..len`, a bit each, packed in 64-bit words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// `len` flags, all clear.
    pub fn new(len: usize) -> Bits {
        Bits { words: vec![0; len.div_ceil(64)], len }
    }

    /// `len` flags from their packed words (flag i is bit i % 64 of word
    /// i / 64); `words` must be `len` flags' worth, with the bits past
    /// `len` clear.
    pub fn from_words(words: Vec<u64>, len: usize) -> Bits {
        assert_eq!(words.len(), len.div_ceil(64), "{} words for {len} flags", words.len());
        Bits { words, len }
    }

    /// The flags `flags`, packed.
    pub fn from_bools(flags: &[bool]) -> Bits {
        let mut bits = Bits::new(flags.len());
        bits.write(0, flags);
        bits
    }

    /// Sets flags `at..at + flags.len()` to `flags` (which must fit).
    pub fn write(&mut self, at: usize, flags: &[bool]) {
        assert!(at + flags.len() <= self.len, "flags past the end");
        for (i, &f) in flags.iter().enumerate() {
            let k = at + i;
            let (w, b) = (k / 64, 1u64 << (k % 64));
            self.words[w] = if f { self.words[w] | b } else { self.words[w] & !b };
        }
    }

    /// Sets flag `i`.
    #[inline]
    pub fn set(&mut self, i: usize) {
        assert!(i < self.len, "flag {i} of {}", self.len);
        self.words[i / 64] |= 1 << (i % 64);
    }

    /// Flag `i`.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        assert!(i < self.len, "flag {i} of {}", self.len);
        self.words[i / 64] >> (i % 64) & 1 == 1
    }

    /// Number of flags.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_read_back_as_written_across_words() {
        let flags: Vec<bool> = (0..200).map(|i| i % 3 == 0 || i == 63 || i == 64).collect();
        let bits = Bits::from_bools(&flags);
        assert_eq!((bits.len(), bits.is_empty()), (200, false));
        assert!((0..200).all(|i| bits.get(i) == flags[i]));
        // Written in pieces that straddle words, over earlier values.
        let mut pieced = Bits::new(200);
        pieced.write(0, &[true; 200]);
        for (at, piece) in [(0, 70), (70, 59), (129, 71)] {
            pieced.write(at, &flags[at..at + piece]);
        }
        assert_eq!(pieced, bits);
        let mut set = Bits::new(200);
        (0..200).filter(|&i| flags[i]).for_each(|i| set.set(i));
        assert_eq!(set, bits);
        assert!(Bits::new(0).is_empty());
        // From words: flag 64 is word 1's lowest bit.
        let words = Bits::from_words(vec![1 << 63, 1], 65);
        assert!((0..65).all(|i| words.get(i) == (i == 63 || i == 64)));
    }

    #[test]
    #[should_panic(expected = "flag 10 of 10")]
    fn a_flag_past_the_end_is_refused() {
        Bits::new(10).get(10);
    }
}
