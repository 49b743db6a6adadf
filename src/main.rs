//! The `meshcheck` binary: a thin front over the library's CLI.
//!
//! The allocator is the system one, with one twist on Linux: allocations of
//! 4 MiB or more (vertex, index and edge arrays of large meshes) are marked
//! for transparent huge pages with `madvise(MADV_HUGEPAGE)`. Filling a fresh
//! 100 MB array otherwise takes 25,000 page faults; with 2 MiB pages it takes
//! 50, which cut the geometry pass on a 1M-triangle mesh by about a quarter
//! (BENCHMARKS.md). Where the kernel has huge pages off, the call does nothing.
//!
//! glibc's malloc also gets a fixed mmap threshold of 1 MiB at start: every
//! block that large is its own mapping, handed back to the kernel when it is
//! freed. Left to itself, glibc raises the threshold after each large free
//! (up to 32 MiB), so later large arrays come from the heap and stay resident
//! after the checks that made them are done; on a 36 MB GLB that kept the
//! peak about 50 MB higher (BENCHMARKS.md, "Memory and throughput by size").
//! Setting glibc's `MALLOC_MMAP_THRESHOLD_` in the environment keeps its value.

use std::alloc::{GlobalAlloc, Layout, System};

struct HugePageHint;

/// Allocations at least this large get the hint.
const HUGE_HINT_BYTES: usize = 4 << 20;

#[cfg(target_os = "linux")]
fn hint(ptr: *mut u8, size: usize) {
    if ptr.is_null() || size < HUGE_HINT_BYTES {
        return;
    }
    // madvise needs a page-aligned start; hint the whole pages inside the block.
    const PAGE: usize = 4096;
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + size) & !(PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside a block we were just given; the hint
        // changes no contents and its failure is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn hint(_ptr: *mut u8, _size: usize) {}

// SAFETY: every call forwards to the system allocator unchanged; the hint
// only advises the kernel about pages of the block just returned.
unsafe impl GlobalAlloc for HugePageHint {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc(layout) };
        hint(p, layout.size());
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout.
        let p = unsafe { System.alloc_zeroed(layout) };
        hint(p, layout.size());
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's arguments.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        hint(p, new_size);
        p
    }
}

#[global_allocator]
static ALLOCATOR: HugePageHint = HugePageHint;

/// Blocks at least this large are mapped on their own and unmapped when freed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD_BYTES: libc::c_int = 1 << 20;

fn main() {
    // glibc's own tunable, when an operator sets it, wins.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only changes the allocator's tuning; it is called
        // before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES);
        }
    }
    std::process::exit(meshcheck::cli::main());
}
