//! Support for the library's own unit tests (compiled only for them):
//! [`alone`], which runs a test in a process of its own, [`resident`],
//! this process's resident memory, and [`Counting`], the unit tests'
//! allocator, which keeps the high-water mark of the bytes allocated.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs the test `name` (its path in this test binary) in a process of its
/// own, and returns `true` there: for tests of process-wide allocator
/// state, which other tests running beside them would disturb (a heap left
/// with free chunks, kept blocks unmapped by an engine run). In the shared
/// process it starts the other one, asserts that the test passed there,
/// and returns `false`.
pub(crate) fn alone(name: &str) -> bool {
    if std::env::var_os("MESHCHECK_TEST_ALONE").is_some() {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env("MESHCHECK_TEST_ALONE", "1")
        .output()
        .expect("run the test binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    false
}

/// Resident memory of this process, bytes (`/proc/self/statm`), for the
/// tests of what the allocator and the engine keep or hand back.
#[cfg(target_os = "linux")]
pub(crate) fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
    statm.split(' ').nth(1).and_then(|p| p.parse::<usize>().ok()).expect("resident pages") * 4096
}

/// The unit tests' global allocator (installed in `lib.rs` for them only):
/// the system's, counting the bytes live and their high-water mark, for
/// the tests of how much an algorithm holds at once. The counts are the
/// whole process's: a test that reads them runs [`alone`].
pub(crate) struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is handed to the system allocator unchanged; only
// counters are updated beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Both blocks may be held while the bytes are copied.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

/// Starts a new high-water mark at the bytes live now, and returns them.
pub(crate) fn mark_live() -> usize {
    let now = LIVE.load(Ordering::Relaxed);
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// The bytes live now.
pub(crate) fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes live at once since [`mark_live`].
pub(crate) fn peak_live() -> usize {
    PEAK.load(Ordering::Relaxed)
}
