//! The hash map the mesh passes use for integer keys: [`FxMap`], a
//! `HashMap` with the fast, deterministic [`FxHasher`]. The weld's cell map
//! and the boundary-loop count both key it by numbers computed from the file.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast, deterministic hasher for integer keys (the Fx multiply-rotate
/// hash). The standard SipHash is DoS-resistant but three times slower, and
/// keys here are cell coordinates computed from the file, whose worst case
/// is bounded separately (see [`weld`](super::weld::weld)).
#[derive(Default)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(*b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_i64(&mut self, v: i64) {
        self.write_u64(v as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
}

/// A HashMap with [`FxHasher`].
pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
