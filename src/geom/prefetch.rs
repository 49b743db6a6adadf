//! Software prefetch for hash tables far larger than the caches: a loop
//! that hashes a block of keys and asks for their slots ([`prefetch`])
//! before probing them in order overlaps the misses that a probe at a time
//! would pay one after another, and builds the same table.

/// Keys hashed and prefetched ahead of their probes.
pub const BLOCK: usize = 32;

/// Asks for the cache line holding `x` ahead of its use; a hint only.
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    // SAFETY: a prefetch reads nothing the program sees and cannot fault,
    // and SSE, which it needs, is part of x86_64's baseline.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((x as *const T).cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
