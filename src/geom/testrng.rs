//! The unit tests' deterministic random numbers: xorshift64 with shifts 13,
//! 7 and 17, seeded per test, so every run draws the same inputs.

/// A xorshift64 generator.
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a nonzero seed.
    pub fn new(seed: u64) -> XorShift {
        XorShift(seed)
    }
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A number in [0, 1) from the high 53 bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
}
