//! The process's allocator ([`Allocator`], installed by the `meshcheck`
//! binary): the system allocator, with two things added on Linux for large
//! blocks (at least [`LARGE_BYTES`]: the vertex, index, edge and sample
//! arrays of large meshes), reuse and faulting in at once, and one left
//! out, the huge-page hint. [`prefault`] does the second for a buffer the
//! caller is about to fill (a file read whole) or a zeroed table it will
//! read before it writes or fill out of order (a hash table, counts,
//! buckets).
//!
//! **Freed large blocks are reused, not handed back at once**, once the
//! process has asked for it ([`reuse_large_blocks`]: the engine does before
//! an input over 16 MiB, the service at start). From then on every large
//! block is a mapping of its own, made here rather than by glibc. A freed
//! one is kept ([`CACHED_SLOTS`], one) and serves the next large request:
//! in place when it is large enough, its tail unmapped, or else grown with
//! `mremap`. Its pages are already there, so the kernel neither faults
//! them in nor zeroes them again. A 1.3M-triangle check run maps about 310
//! MB of large blocks in all, for a peak of about 95 MB, and the kernel's
//! zeroing of fresh pages was 11-15 % of its CPU; keeping one block took
//! 3-8 % off the large spheres' check runs (BENCHMARKS.md, "Eighteenth
//! step").
//!
//! **Fresh mappings are faulted in at once** (`MAP_POPULATE`) when they
//! are asked for uninitialised: such a block is an array about to be
//! filled, and the kernel allocating its pages in one call costs two
//! thirds of a fault for each 4 KiB (64 MB: 16.7 against 25.3 ms). A
//! zeroed block is left to fault as it is written (a raster or a table
//! may be written only where it is used, and its untouched pages cost
//! nothing), and so is the new tail of a block grown with `mremap` (a
//! growing vector's spare half may never be written), or grown out of
//! glibc's into one of this module's (only the copied bytes are faulted
//! in: faulted in whole, the service's 8 MB sphere job held its vector's
//! unwritten half, 49.8 against 47.6 MB; BENCHMARKS.md, "Thirty-first
//! step"). The peaks of s13
//! and of the scale benchmark's spheres did not move; s13's checks took
//! 0.045 s less CPU, the 128 MB sphere's 0.135 s (populating the zeroed
//! blocks too saved as much again, for pages a sparse raster would never
//! have held; BENCHMARKS.md, "Twenty-second step"). One of 8 MiB or more is
//! faulted in in two halves side by side, after the blocks' lock is let go:
//! the second half on a thread of this module's own (`halves`), which
//! took s13's whole run from 0.416 to 0.408 s (BENCHMARKS.md, "Thirtieth
//! step").
//!
//! **No huge-page hint.** Large blocks are left to the kernel's own
//! transparent-huge-page policy (`/sys/kernel/mm/transparent_hugepage`):
//! huge pages where it is `always`, small ones where it is `madvise`.
//! They used to be hinted (`madvise(MADV_HUGEPAGE)`), which is fast only
//! while the kernel's free huge pages are still backed by the host. On a
//! guest with free page reporting (this project's machines), free memory
//! is handed back to the host a few seconds after it is freed, and a huge
//! page carved from it then costs 23 times what a backed one does to
//! first write (0.35 against 8 GB/s; small pages 2.4 GB/s whatever the
//! host did). With the hint, s13 (1.3M triangles) was 25-45 ms faster
//! when runs followed each other closely and 30-100 ms slower after
//! twenty idle seconds (a CLI run, a service job after a pause); the 128
//! MB sphere was 7-10 % slower either way (BENCHMARKS.md, "Twenty-second
//! step"). Small pages cost the same in every state.
//!
//! **The peak.** A kept block's pages stay resident, while a live block's
//! pages count only once written, so keeping can raise the peak: with
//! eight blocks kept, s13's rose from 91-111 MB to 109-113. Hence one, and
//! whenever a request needs pages the kept block cannot give (a larger
//! block, a block grown in place), the kept block is grown into it or
//! unmapped first. With one block kept the peaks of the scale benchmark's
//! spheres (32 and 128 MB, CLI and service) and of s13 were those of
//! glibc's blocks, within their run-to-run spread. The engine unmaps the
//! kept block ([`release_cached`]) at the end of every input, and between
//! a large mesh's phases, so none is held while the process idles.
//!
//! It also decides glibc's arena count for the binary ([`arena_count`]:
//! one for the service, one per core otherwise; main.rs's header has the
//! figures), which `main` applies before any thread starts.
//!
//! Which blocks are this module's own is recorded in a table of
//! [`LIVE_SLOTS`] mappings, so that a large block glibc made before the
//! switch (or once the table is full) is still freed by glibc.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Blocks at least this large are, once [`reuse_large_blocks`] has run,
/// mapped and reused here.
pub const LARGE_BYTES: usize = 4 << 20;

/// Blocks at least this large are faulted in by [`prefault`]; smaller
/// ones are left to fault as they are written. Below
/// [`LARGE_BYTES`] a block is glibc's: one carved from its heap is already
/// resident (the advice then only walks its page table), a fresh mapping
/// is not, and a zeroed one would map the zero page on its first read.
pub const PREFAULT_BYTES: usize = 1 << 20;

/// Freed large blocks kept for reuse, at most (see the module's header:
/// more raised the peak).
pub const CACHED_SLOTS: usize = 1;

/// Large blocks of this module's own alive at once, at most; past that,
/// a large request goes to glibc.
pub const LIVE_SLOTS: usize = 1024;

/// Whether large blocks are mapped and reused here ([`reuse_large_blocks`]).
static REUSE: AtomicBool = AtomicBool::new(false);

/// From now on, large blocks are mapped here and freed ones reused (see the
/// module's header). For the rest of the process: the engine calls it
/// before an input over 16 MiB, the service at start. Returns whether this
/// call made the switch (false when an earlier one had, and off Linux,
/// where every block stays the system allocator's). Has no effect where
/// [`Allocator`] is not the global allocator.
pub fn reuse_large_blocks() -> bool {
    let switched = cfg!(target_os = "linux") && !REUSE.swap(true, Ordering::Relaxed);
    #[cfg(target_os = "linux")]
    if switched {
        halves::start();
    }
    switched
}

/// Whether [`reuse_large_blocks`] has switched this process (never off
/// Linux).
pub fn reusing_large_blocks() -> bool {
    REUSE.load(Ordering::Relaxed)
}

/// Faults in, in one call, the whole pages of `buf`, a block of at least
/// [`PREFAULT_BYTES`] that the caller is about to write from end to end (a
/// file read into it) or to read and write all over (a zeroed hash
/// table): the kernel then allocates its pages in a batch instead of
/// taking a fault for each 4 KiB (`MADV_POPULATE_WRITE`; 64 MB in 16.7 ms
/// against 25.3 ms page by page on this project's machines). For a zeroed
/// table it saves more: a page read before it is written is first mapped
/// to the kernel's shared zero page and copied on the first write, a
/// second fault that flushes the page from every core's TLB (on a
/// multi-threaded process, an interrupt to each; PERF-006's 8 MB table on
/// s13 took 19 ms of CPU in those faults). Its contents do not change.
/// Smaller blocks are left alone, and so is a kernel older than 5.14,
/// which refuses the advice.
///
/// On a thread of a pool of several, a block of at least
/// [`PREFAULT_PARTS_BYTES`] is faulted in in parts side by side, one a
/// thread (the other cores, when idle, take theirs): 32 MB took 7-8 ms on
/// two threads against 11-12 ms on one on this project's machines. Outside
/// a pool (a file read by the service) it is one call on this thread.
pub fn prefault<T: Copy>(buf: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        let bytes = std::mem::size_of_val(buf);
        if bytes >= PREFAULT_BYTES {
            let start = (buf.as_ptr() as usize).next_multiple_of(PAGE);
            let end = (buf.as_ptr() as usize + bytes) & !(PAGE - 1);
            // At most four parts, as the geometry's passes in parts
            // (`geom::parts::MAX_PARTS`, a layer above this one).
            let threads = rayon::current_thread_index().map_or(1, |_| rayon::current_num_threads());
            let parts = if bytes >= PREFAULT_PARTS_BYTES { threads.clamp(1, 4) } else { 1 };
            // SAFETY: the range lies inside `buf`, which the caller holds
            // mutably; entering its pages changes no contents.
            unsafe { populate(start, end - start, Entry::Write, parts) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

/// Blocks at least this large are faulted in by [`prefault`] in parts, on
/// a pool of several threads: below it, a part's hand-over costs about
/// what the second thread saves.
pub const PREFAULT_PARTS_BYTES: usize = 8 << 20;

/// Unmaps every kept block (see the module's header).
pub fn release_cached() {
    #[cfg(target_os = "linux")]
    if reusing_large_blocks() {
        lock().flush();
    }
}

/// How many freed large blocks are kept now, and their bytes.
#[cfg(test)]
fn cached() -> (usize, usize) {
    #[cfg(target_os = "linux")]
    {
        let b = lock();
        let kept = b.cached.iter().filter(|c| c.0 != 0);
        (kept.clone().count(), kept.map(|c| c.1).sum())
    }
    #[cfg(not(target_os = "linux"))]
    (0, 0)
}

/// The allocator (see the module's header).
pub struct Allocator;

/// The page size the mappings are rounded to.
pub const PAGE: usize = 4096;

/// Whether a block of this layout is large.
fn large(layout: Layout) -> bool {
    layout.size() >= LARGE_BYTES && layout.align() <= PAGE
}

/// The blocks of this module's own: those alive, and those kept. Each is
/// `(address, mapped length)`; address 0 marks a free slot.
#[cfg(target_os = "linux")]
struct Blocks {
    live: [(usize, usize); LIVE_SLOTS],
    cached: [(usize, usize); CACHED_SLOTS],
}

#[cfg(target_os = "linux")]
static BLOCKS: std::sync::Mutex<Blocks> =
    std::sync::Mutex::new(Blocks { live: [(0, 0); LIVE_SLOTS], cached: [(0, 0); CACHED_SLOTS] });

#[cfg(target_os = "linux")]
fn lock() -> std::sync::MutexGuard<'static, Blocks> {
    // Nothing panics while the lock is held; a poisoned lock's table is whole.
    BLOCKS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `size` rounded up to whole pages; `None` past the address space.
fn mapped_len(size: usize) -> Option<usize> {
    size.checked_next_multiple_of(PAGE)
}

/// A fresh anonymous mapping of `len` bytes, its pages faulted in at once
/// when `populate` (see the module's header); null when the system refuses
/// it.
#[cfg(target_os = "linux")]
fn map(len: usize, populate: bool) -> *mut u8 {
    let populate = if populate { libc::MAP_POPULATE } else { 0 };
    // SAFETY: a new private anonymous mapping; it aliases nothing.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | populate,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    p.cast()
}

/// Fresh uninitialised blocks of at least [`PREFAULT_PARTS_BYTES`] are
/// faulted in in two halves side by side: the allocating thread's, and
/// the second's on a thread of this module's own, started when the process
/// switches to its own large blocks ([`reuse_large_blocks`]). Before,
/// `MAP_POPULATE` faulted a block in on the allocating thread, under the
/// blocks' lock, and most of s13's large arrays are made where the other
/// core has nothing to run (a check's samples before it measures, the
/// world mesh's arrays between its parallel passes). The helper takes one
/// block at a time: a thread that finds it busy faults its block in alone,
/// and one whose half is done before the helper has started takes the
/// second half back, so a block never waits on a thread the system has
/// not run yet. It does nothing but `MADV_POPULATE_WRITE` (no allocation,
/// no lock of anyone else's), so it cannot deadlock with the allocator's
/// callers.
#[cfg(target_os = "linux")]
mod halves {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

    /// The block's second half waiting for the helper, and whether the
    /// helper has finished the one it took.
    struct Job {
        waiting: Option<(usize, usize)>,
        finished: bool,
    }

    static JOB: Mutex<Job> = Mutex::new(Job { waiting: None, finished: false });
    /// The helper waits on this for a half.
    static POSTED: Condvar = Condvar::new();
    /// The allocating thread waits on this for the helper's half.
    static FINISHED: Condvar = Condvar::new();
    /// Whether the helper runs.
    static READY: AtomicBool = AtomicBool::new(false);
    /// Whether a thread is using the helper now (one block at a time).
    static TAKEN: AtomicBool = AtomicBool::new(false);
    /// Blocks faulted in in halves, for the tests.
    #[cfg(test)]
    pub static HALVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn job() -> MutexGuard<'static, Job> {
        // Nothing panics while it is held; a poisoned job is whole.
        JOB.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the helper (once). A process whose kernel refuses the advice
    /// (before 5.14), or whose system refuses a thread, has every block
    /// faulted in on its allocating thread (`MAP_POPULATE`), as before.
    pub fn start() {
        if !advice_taken() {
            return;
        }
        let spawned = std::thread::Builder::new().name("meshcheck-pages".into()).spawn(|| {
            loop {
                let mut j = job();
                let (addr, len) = loop {
                    match j.waiting.take() {
                        Some(half) => break half,
                        None => j = POSTED.wait(j).unwrap_or_else(PoisonError::into_inner),
                    }
                };
                drop(j);
                super::populate_range(addr, len);
                job().finished = true;
                FINISHED.notify_one();
            }
        });
        READY.store(spawned.is_ok(), Ordering::Release);
    }

    /// Whether the kernel takes `MADV_POPULATE_WRITE` (asked of one page
    /// of a mapping made for the question).
    fn advice_taken() -> bool {
        let p = super::map(super::PAGE, false);
        if p.is_null() {
            return false;
        }
        // SAFETY: the page just mapped, which nothing else holds.
        let taken = unsafe { libc::madvise(p.cast(), super::PAGE, libc::MADV_POPULATE_WRITE) } == 0;
        super::unmap(p as usize, super::PAGE);
        taken
    }

    /// Whether the helper runs.
    pub fn ready() -> bool {
        READY.load(Ordering::Acquire)
    }

    /// Faults in the `len` bytes (whole pages) at `addr`, the second half
    /// on the helper when it is free.
    pub fn populate(addr: usize, len: usize) {
        if TAKEN.swap(true, Ordering::Acquire) {
            super::populate_range(addr, len);
            return;
        }
        let half = len / 2 / super::PAGE * super::PAGE;
        {
            let mut j = job();
            j.waiting = Some((addr + half, len - half));
            j.finished = false;
        }
        POSTED.notify_one();
        super::populate_range(addr, half);
        let mut j = job();
        if let Some((at, rest)) = j.waiting.take() {
            // Not started: this thread does it.
            drop(j);
            super::populate_range(at, rest);
        } else {
            while !j.finished {
                j = FINISHED.wait(j).unwrap_or_else(PoisonError::into_inner);
            }
            #[cfg(test)]
            HALVED.fetch_add(1, Ordering::Relaxed);
            drop(j);
        }
        TAKEN.store(false, Ordering::Release);
    }
}

/// Faults in the `len` bytes at `addr` (whole pages of a mapping this
/// module made), in one call.
#[cfg(target_os = "linux")]
fn populate_range(addr: usize, len: usize) {
    // SAFETY: the range lies in a mapping of this module's own, handed to
    // no one yet; entering its pages changes no contents.
    unsafe { populate(addr, len, Entry::Write, 1) }
}

/// How [`populate`] enters a page: as a read would (a file's read-only
/// mapping: its page, with the file's bytes), or as a write would (a block
/// about to be written: a page of its own, not the shared zero page).
#[derive(Clone, Copy, Debug)]
pub enum Entry {
    /// `MADV_POPULATE_READ`.
    Read,
    /// `MADV_POPULATE_WRITE`.
    Write,
}

/// Enters the pages of the `len` bytes at `addr` (a page boundary) in one
/// call each for `parts` parts (1 or more), cut on page boundaries and
/// entered side by side on the pool: the kernel then allocates or reads
/// them in a batch instead of taking a fault for each 4 KiB. A kernel
/// older than 5.14 refuses the advice, and the pages are then faulted in
/// as they are used, with the same contents.
///
/// # Safety
///
/// The range lies in a live mapping of this process that the caller holds
/// (a read-only one for [`Entry::Read`] only).
#[cfg(target_os = "linux")]
pub unsafe fn populate(addr: usize, len: usize, entry: Entry, parts: usize) {
    let advice = match entry {
        Entry::Read => libc::MADV_POPULATE_READ,
        Entry::Write => libc::MADV_POPULATE_WRITE,
    };
    let one = |from: usize, to: usize| {
        if to > from {
            // SAFETY: `from..to` lies in `addr..addr + len`, which the
            // caller vouches for; the advice changes no contents, and an
            // error (an old kernel) changes nothing.
            unsafe {
                libc::madvise(from as *mut libc::c_void, to - from, advice);
            }
        }
    };
    let parts = parts.max(1);
    let at = |i: usize| if i == parts { addr + len } else { addr + (len / PAGE) * i / parts * PAGE };
    if parts == 1 {
        one(addr, addr + len);
    } else {
        use rayon::prelude::*;
        (0..parts).into_par_iter().for_each(|i| one(at(i), at(i + 1)));
    }
}

/// Unmaps `len` bytes at `addr` (a whole mapping of this module's, or its
/// page-aligned tail).
#[cfg(target_os = "linux")]
fn unmap(addr: usize, len: usize) {
    // SAFETY: the range is a mapping (or a mapping's tail) this module made
    // and no longer hands out.
    unsafe {
        libc::munmap(addr as *mut libc::c_void, len);
    }
}

/// The mapping at `addr` resized from `old` to `new` bytes, moved if need
/// be; null when the system refuses (the old mapping is then untouched).
#[cfg(target_os = "linux")]
fn remap(addr: usize, old: usize, new: usize) -> *mut u8 {
    // SAFETY: `addr` is a whole mapping of this module's, `old` its length;
    // its contents move with it.
    let p = unsafe { libc::mremap(addr as *mut libc::c_void, old, new, libc::MREMAP_MAYMOVE) };
    if p == libc::MAP_FAILED {
        return std::ptr::null_mut();
    }
    p.cast()
}

#[cfg(target_os = "linux")]
impl Blocks {
    /// Unmaps every kept block.
    fn flush(&mut self) {
        for slot in &mut self.cached {
            if slot.0 != 0 {
                unmap(slot.0, slot.1);
                *slot = (0, 0);
            }
        }
    }

    /// A free slot of the live table.
    fn free_slot(&self) -> Option<usize> {
        self.live.iter().position(|l| l.0 == 0)
    }

    fn record(&mut self, addr: usize, len: usize) {
        if let Some(slot) = self.live.iter_mut().find(|l| l.0 == 0) {
            *slot = (addr, len);
        }
    }

    /// The mapped length of a live block of this module's at `addr`,
    /// removed from the table; `None` when it is not one.
    fn forget(&mut self, addr: usize) -> Option<usize> {
        let slot = self.live.iter_mut().find(|l| l.0 == addr)?;
        let len = slot.1;
        *slot = (0, 0);
        Some(len)
    }

    fn owns(&self, addr: usize) -> bool {
        self.live.iter().any(|l| l.0 == addr)
    }

    /// A freed block: kept in a free slot, or unmapped when none is.
    fn keep(&mut self, addr: usize, len: usize) {
        match self.cached.iter_mut().find(|c| c.0 == 0) {
            Some(slot) => *slot = (addr, len),
            None => unmap(addr, len),
        }
    }

    /// A block of `len` bytes: a kept one (the smallest large enough, its
    /// tail unmapped; or the largest, grown, every other kept one unmapped
    /// first), or a fresh mapping (every kept one unmapped first). Returns
    /// the address and how many of its first bytes were in use before
    /// (and so hold old contents); null when the system refuses.
    fn take(&mut self, len: usize, populate: bool) -> (*mut u8, usize) {
        let kept = |c: &&mut (usize, usize)| c.0 != 0;
        if let Some(slot) = self.cached.iter_mut().filter(kept).filter(|c| c.1 >= len).min_by_key(|c| c.1) {
            let (addr, have) = std::mem::take(slot);
            if have > len {
                unmap(addr + len, have - len);
            }
            return (addr as *mut u8, len);
        }
        let largest = self.cached.iter_mut().filter(kept).max_by_key(|c| c.1).map(std::mem::take);
        self.flush();
        match largest {
            Some((addr, have)) => {
                let p = remap(addr, have, len);
                if p.is_null() {
                    unmap(addr, have);
                    (map(len, populate), 0)
                } else {
                    (p, have)
                }
            }
            None => (map(len, populate), 0),
        }
    }
}

impl Allocator {
    /// A large block of this module's own for `layout`, zeroed when asked;
    /// `None` when blocks are not reused yet or the table is full (the
    /// caller then asks glibc). A null inside is the system's refusal.
    #[cfg(target_os = "linux")]
    fn own(&self, layout: Layout, zeroed: bool) -> Option<*mut u8> {
        self.own_filled(layout, zeroed, !zeroed)
    }

    /// [`Allocator::own`], its pages faulted in at once only when `fill`
    /// (a block about to be written whole) and not `zeroed`.
    #[cfg(target_os = "linux")]
    fn own_filled(&self, layout: Layout, zeroed: bool, fill: bool) -> Option<*mut u8> {
        if !large(layout) || !reusing_large_blocks() {
            return None;
        }
        let len = mapped_len(layout.size())?;
        let mut b = lock();
        // The table is scanned once: the slot found is the one recorded.
        let slot = b.free_slot()?;
        // A zeroed block may be a sparse table, written where it is used:
        // only an uninitialised one, about to be filled, is faulted in; a
        // large one in halves side by side, once the lock is let go.
        let fill = fill && !zeroed;
        let in_halves = fill && len >= PREFAULT_PARTS_BYTES && halves::ready();
        let (p, old) = b.take(len, fill && !in_halves);
        if !p.is_null() {
            b.live[slot] = (p as usize, len);
        }
        drop(b);
        if in_halves && old == 0 && !p.is_null() {
            halves::populate(p as usize, len);
        }
        if zeroed && old > 0 && !p.is_null() {
            // SAFETY: the first `old` bytes of the block just taken hold a
            // freed block's contents; fresh pages are zero already.
            unsafe { std::ptr::write_bytes(p, 0, old.min(layout.size())) };
        }
        Some(p)
    }

    #[cfg(not(target_os = "linux"))]
    fn own(&self, _layout: Layout, _zeroed: bool) -> Option<*mut u8> {
        None
    }

    #[cfg(not(target_os = "linux"))]
    fn own_filled(&self, _layout: Layout, _zeroed: bool, _fill: bool) -> Option<*mut u8> {
        None
    }

    /// Whether `ptr` (of `layout`) is a block of this module's own.
    fn is_own(&self, ptr: *mut u8, layout: Layout) -> bool {
        #[cfg(target_os = "linux")]
        if large(layout) && reusing_large_blocks() {
            return lock().owns(ptr as usize);
        }
        let _ = (ptr, layout);
        false
    }
}

// SAFETY: blocks are either the system allocator's, forwarded unchanged, or
// whole anonymous mappings made here, recorded in the table while they are
// handed out, so each is freed by whoever made it; a kept mapping is handed
// out again only after it left the kept slots.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = self.own(layout, false) {
            return p;
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if let Some(p) = self.own(layout, true) {
            return p;
        }
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        #[cfg(target_os = "linux")]
        if large(layout) && reusing_large_blocks() {
            let mut b = lock();
            if let Some(len) = b.forget(ptr as usize) {
                b.keep(ptr as usize, len);
                return;
            }
        }
        // SAFETY: not one of this module's blocks: the system allocator's,
        // forwarded with the caller's pointer and layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Whose block it is, and the new layout, asked once.
        let own = self.is_own(ptr, layout);
        let new_layout = Layout::from_size_align(new_size, layout.align()).ok();
        #[cfg(target_os = "linux")]
        if own
            && let (Some(new_layout), Some(new_len)) = (new_layout, mapped_len(new_size))
            && large(new_layout)
        {
            let mut b = lock();
            let Some(old_len) = b.forget(ptr as usize) else { return std::ptr::null_mut() };
            if new_len > old_len {
                // New pages: nothing kept is held beside them.
                b.flush();
            }
            let p = if new_len == old_len { ptr } else { remap(ptr as usize, old_len, new_len) };
            if p.is_null() {
                b.record(ptr as usize, old_len);
            } else {
                b.record(p as usize, new_len);
            }
            return p;
        }
        if own || (reusing_large_blocks() && new_layout.is_some_and(large)) {
            // Between this module and glibc: a new block, the contents
            // copied, the old block freed by whoever made it.
            let Some(new_layout) = new_layout else {
                return std::ptr::null_mut();
            };
            // Only the copied bytes are written now: their pages are
            // faulted in in one call, as a fresh block's are, and a growing
            // vector's spare part is left to fault as it is written, as a
            // tail grown with `mremap` is. Faulted in whole, a vector that
            // doubled past 4 MiB held its unwritten half resident (the
            // service's 8 MB sphere job: BENCHMARKS.md, "Thirty-first step").
            let p = match self.own_filled(new_layout, false, new_size <= layout.size()) {
                Some(p) => {
                    #[cfg(target_os = "linux")]
                    if !p.is_null() && new_size > layout.size() {
                        populate_range(p as usize, layout.size().next_multiple_of(PAGE));
                    }
                    p
                }
                // SAFETY: a valid layout of non-zero size (the caller's contract).
                None => unsafe { System.alloc(new_layout) },
            };
            if !p.is_null() {
                // SAFETY: both blocks hold at least the smaller size; they
                // are distinct (the old one is still allocated).
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, p, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            return p;
        }
        // SAFETY: forwarded with the caller's arguments.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Whether the user chose glibc's arena count in the environment
/// (`MALLOC_ARENA_MAX`, or `glibc.malloc.arena_max` in `GLIBC_TUNABLES`),
/// read through `var`; the binary then leaves it.
pub fn arena_count_chosen(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> bool {
    var("MALLOC_ARENA_MAX").is_some()
        || var("GLIBC_TUNABLES").is_some_and(|t| t.to_string_lossy().contains("glibc.malloc.arena_max"))
}

/// glibc's arena count for the command whose first argument is `first`
/// on `cores` cores: one for the service (`serve`: what a job freed on one
/// thread could not be reused by the next job on another, and stayed
/// resident in both), one per core for every other command (a single
/// arena's lock queued the pool threads); `None` when the user `chose` it.
/// The subcommand is the first argument: the CLI takes no option before
/// it (`-h` and `-V` print and exit). main.rs's header has the figures.
pub fn arena_count(first: Option<&std::ffi::OsStr>, chose: bool, cores: usize) -> Option<usize> {
    if chose {
        return None;
    }
    Some(if first.is_some_and(|a| a == "serve") { 1 } else { cores.max(1) })
}

#[cfg(test)]
mod arena_tests {
    use super::*;
    use std::ffi::{OsStr, OsString};

    #[test]
    fn the_service_gets_one_arena_every_other_command_one_a_core() {
        let serve = Some(OsStr::new("serve"));
        assert_eq!(arena_count(serve, false, 16), Some(1));
        for other in ["validate", "mcp", "render", "help", "--serve", "serve2"] {
            assert_eq!(arena_count(Some(OsStr::new(other)), false, 16), Some(16), "{other}");
        }
        assert_eq!(arena_count(None, false, 2), Some(2));
        assert_eq!(arena_count(Some(OsStr::new("validate")), false, 0), Some(1));
        // The user's choice stands, for the service too.
        assert_eq!(arena_count(serve, true, 16), None);
    }

    #[test]
    fn an_arena_count_in_the_environment_is_the_users_choice() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
        };
        assert!(!arena_count_chosen(env(&[])));
        assert!(arena_count_chosen(env(&[("MALLOC_ARENA_MAX", "4")])));
        assert!(arena_count_chosen(env(&[(
            "GLIBC_TUNABLES",
            "glibc.malloc.trim_threshold=1:glibc.malloc.arena_max=2"
        )])));
        assert!(!arena_count_chosen(env(&[("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4194304")])));
        assert!(!arena_count_chosen(env(&[("MALLOC_TOP_PAD_", "1")])));
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn layout(size: usize) -> Layout {
        Layout::from_size_align(size, 8).unwrap()
    }

    /// Fills `len` bytes at `p` with a pattern of `seed`.
    fn fill(p: *mut u8, len: usize, seed: u8) {
        // SAFETY: the callers pass blocks of at least `len` bytes.
        let s = unsafe { std::slice::from_raw_parts_mut(p, len) };
        s.iter_mut().enumerate().for_each(|(i, b)| *b = (i as u8).wrapping_mul(31).wrapping_add(seed));
    }

    /// Whether `len` bytes at `p` hold [`fill`]'s pattern of `seed`.
    fn holds(p: *const u8, len: usize, seed: u8) -> bool {
        // SAFETY: as in `fill`.
        let s = unsafe { std::slice::from_raw_parts(p, len) };
        s.iter().enumerate().all(|(i, &b)| b == (i as u8).wrapping_mul(31).wrapping_add(seed))
    }

    /// A block of `size` bytes from the allocator, uninitialised.
    unsafe fn a_alloc(size: usize) -> *mut u8 {
        // SAFETY: a valid layout; the caller frees it with the same.
        unsafe { Allocator.alloc(layout(size)) }
    }

    fn zero(p: *const u8, len: usize) -> bool {
        // SAFETY: as in `fill`.
        unsafe { std::slice::from_raw_parts(p, len) }.iter().all(|&b| b == 0)
    }

    #[test]
    fn freed_large_blocks_are_reused_whole_and_zeroed_when_asked() {
        if !crate::testing::alone("memory::tests::freed_large_blocks_are_reused_whole_and_zeroed_when_asked") {
            return;
        }
        let a = Allocator;
        // SAFETY (every block below): allocated with the layout it is freed
        // and reallocated with, and read within its size.
        unsafe {
            // Before the switch: glibc's, freed by glibc after it too, and
            // moved (copied) into a block of this module's when grown.
            let early = a.alloc(layout(5 * MIB));
            let early_grown = a.alloc(layout(5 * MIB));
            fill(early_grown, 5 * MIB, 9);
            assert!(!a.is_own(early, layout(5 * MIB)));
            assert!(reuse_large_blocks() && reusing_large_blocks(), "this call switched");
            assert!(!reuse_large_blocks(), "once a process");
            assert!(!a.is_own(early, layout(5 * MIB)), "a block glibc made stays glibc's");
            a.dealloc(early, layout(5 * MIB));
            assert_eq!(cached(), (0, 0));
            let grown = a.realloc(early_grown, layout(5 * MIB), 7 * MIB);
            assert!(a.is_own(grown, layout(7 * MIB)) && holds(grown, 5 * MIB, 9));
            a.dealloc(grown, layout(7 * MIB));
            assert_eq!(cached(), (1, 7 * MIB));
            release_cached();
            assert_eq!(cached(), (0, 0));

            // A freed block serves the next request it can hold, in place,
            // its tail handed back; zeroed when asked.
            let first = a.alloc(layout(6 * MIB));
            fill(first, 6 * MIB, 1);
            a.dealloc(first, layout(6 * MIB));
            assert_eq!(cached(), (1, 6 * MIB));
            let second = a.alloc_zeroed(layout(5 * MIB + 3));
            assert_eq!(second, first, "the kept block is reused");
            assert!(zero(second, 5 * MIB + 3));
            assert_eq!(cached(), (0, 0));
            let third = a.alloc(layout(4 * MIB));
            assert_ne!(third, second);
            a.dealloc(third, layout(4 * MIB));
            // Grown, shrunk, and moved to glibc: the contents go along.
            fill(second, 5 * MIB + 3, 2);
            let grown = a.realloc(second, layout(5 * MIB + 3), 11 * MIB);
            assert_eq!(cached(), (0, 0), "new pages: nothing kept beside them");
            assert!(holds(grown, 5 * MIB + 3, 2));
            let shrunk = a.realloc(grown, layout(11 * MIB), 4 * MIB + 1);
            assert!(holds(shrunk, 4 * MIB + 1, 2) && a.is_own(shrunk, layout(4 * MIB + 1)));
            let small = a.realloc(shrunk, layout(4 * MIB + 1), MIB);
            assert!(holds(small, MIB, 2) && !a.is_own(small, layout(MIB)));
            assert_eq!(cached().0, 1, "the block left behind is kept");
            a.dealloc(small, layout(MIB));

            // A request larger than the kept block grows it; what it held
            // is zeroed when asked, the rest is fresh.
            let kept = cached().1;
            let big = a.alloc_zeroed(layout(kept + 3 * MIB));
            assert!(zero(big, kept + 3 * MIB));
            assert_eq!(cached(), (0, 0));
            // One slot: a second freed block is unmapped, not kept.
            let other = a.alloc(layout(4 * MIB));
            a.dealloc(big, layout(kept + 3 * MIB));
            a.dealloc(other, layout(4 * MIB));
            assert_eq!(cached(), (1, kept + 3 * MIB));
            release_cached();

            // Past the table's room, large blocks are glibc's. The table is
            // filled with made-up entries, not 4 GiB of real blocks (a
            // fresh block's pages come with it); this process is the
            // test's own.
            let block = a.alloc(layout(4 * MIB));
            assert!(a.is_own(block, layout(4 * MIB)));
            let made_up: Vec<usize> = {
                let mut b = lock();
                let free: Vec<usize> = (0..LIVE_SLOTS).filter(|&i| b.live[i].0 == 0).collect();
                for &i in &free {
                    b.live[i] = (PAGE * (i + 1), PAGE);
                }
                free
            };
            let past = a.alloc(layout(4 * MIB));
            assert!(!past.is_null() && !a.is_own(past, layout(4 * MIB)));
            a.dealloc(past, layout(4 * MIB));
            {
                let mut b = lock();
                for i in made_up {
                    b.live[i] = (0, 0);
                }
            }
            a.dealloc(block, layout(4 * MIB));
            release_cached();
            assert_eq!(cached(), (0, 0));
        }
    }

    /// The `VmFlags` of the mapping holding `p` (`/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    fn vm_flags(p: *const u8) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_once(' ').map(|(r, _)| r).and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range
                && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&(p as usize));
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.trim().to_string();
            }
        }
        panic!("no mapping holds {p:?}")
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn large_blocks_are_left_to_the_kernels_huge_page_policy() {
        if !crate::testing::alone("memory::tests::large_blocks_are_left_to_the_kernels_huge_page_policy") {
            return;
        }
        let hinted = |p: *const u8| vm_flags(p).split(' ').any(|f| f == "hg");
        let a = Allocator;
        // SAFETY (every block below): allocated with the layout it is freed
        // and reallocated with, and written within its size.
        unsafe {
            // The reader sees a hint where there is one.
            let control = a.alloc(layout(6 * MIB));
            fill(control, 6 * MIB, 3);
            let start = (control as usize).next_multiple_of(PAGE);
            if libc::madvise(start as *mut libc::c_void, 4 * MIB, libc::MADV_HUGEPAGE) == 0 {
                assert!(hinted(start as *const u8), "{}", vm_flags(start as *const u8));
            }
            a.dealloc(control, layout(6 * MIB));
            // glibc's large blocks (before the switch), then this module's,
            // new and grown: none hinted.
            let early = a.alloc(layout(6 * MIB));
            fill(early, 6 * MIB, 1);
            assert!(!hinted(early), "{}", vm_flags(early));
            a.dealloc(early, layout(6 * MIB));
            reuse_large_blocks();
            let own = a.alloc(layout(6 * MIB));
            fill(own, 6 * MIB, 2);
            assert!(a.is_own(own, layout(6 * MIB)) && !hinted(own), "{}", vm_flags(own));
            let grown = a.realloc(own, layout(6 * MIB), 13 * MIB);
            fill(grown, 13 * MIB, 4);
            assert!(a.is_own(grown, layout(13 * MIB)) && !hinted(grown), "{}", vm_flags(grown));
            a.dealloc(grown, layout(13 * MIB));
            release_cached();
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn fresh_uninitialised_blocks_and_prefaulted_buffers_and_tables_are_resident_before_they_are_written() {
        if !crate::testing::alone(
            "memory::tests::fresh_uninitialised_blocks_and_prefaulted_buffers_and_tables_are_resident_before_they_are_written",
        ) {
            return;
        }
        let a = Allocator;
        reuse_large_blocks();
        // SAFETY (every block below): allocated with the layout it is freed
        // and reallocated with, and written within its size.
        unsafe {
            // A fresh mapping of this module's: its pages come with it.
            let before = crate::testing::resident();
            let own = a.alloc(layout(8 * MIB));
            let grew = crate::testing::resident() - before;
            assert!(a.is_own(own, layout(8 * MIB)) && grew >= 8 * MIB, "{grew} bytes resident");
            // A grown tail is faulted in as it is written, not at once.
            let before = crate::testing::resident();
            let grown = a.realloc(own, layout(8 * MIB), 24 * MIB);
            let grew = crate::testing::resident().saturating_sub(before);
            assert!(grew < 4 * MIB, "{grew} bytes resident");
            a.dealloc(grown, layout(24 * MIB));
            release_cached();
            // So is the spare part of a block grown out of glibc's into
            // one of this module's: only the copied bytes come in.
            let small = a.alloc(layout(2 * MIB));
            fill(small, 2 * MIB, 5);
            let before = crate::testing::resident();
            let moved = a.realloc(small, layout(2 * MIB), 16 * MIB);
            let grew = crate::testing::resident().saturating_sub(before);
            assert!(a.is_own(moved, layout(16 * MIB)) && grew < 6 * MIB, "{grew} bytes resident");
            assert!(holds(moved, 2 * MIB, 5), "the contents moved with it");
            a.dealloc(moved, layout(16 * MIB));
            release_cached();
            // A zeroed one faults as it is written.
            let before = crate::testing::resident();
            let zeroed = a.alloc_zeroed(layout(8 * MIB));
            let grew = crate::testing::resident().saturating_sub(before);
            assert!(a.is_own(zeroed, layout(8 * MIB)) && grew < 4 * MIB, "{grew} bytes resident");
            a.dealloc(zeroed, layout(8 * MIB));
            release_cached();
        }
        // A large one is faulted in in halves, the second on the helper
        // (which takes it whenever it starts before the first is done:
        // at least once in eight blocks), and still reads zero.
        let halved = halves::HALVED.load(Ordering::Relaxed);
        for _ in 0..8 {
            let size = 4 * PREFAULT_PARTS_BYTES + 3;
            let before = crate::testing::resident();
            // SAFETY: as above.
            let big = unsafe { a.alloc(layout(size)) };
            let grew = crate::testing::resident() - before;
            assert!(a.is_own(big, layout(size)) && grew >= 4 * PREFAULT_PARTS_BYTES, "{grew} bytes resident");
            assert!(zero(big, size));
            // SAFETY: as above.
            unsafe { a.dealloc(big, layout(size)) };
            release_cached();
        }
        assert!(halves::HALVED.load(Ordering::Relaxed) > halved, "the helper never took a half");
        // Several threads at once: one uses the helper, the others fault
        // their blocks in alone, and each block is whole (a kept one holds
        // what it held, as uninitialised memory may).
        std::thread::scope(|s| {
            for seed in 0..4u8 {
                s.spawn(move || {
                    for _ in 0..4 {
                        let size = 2 * PREFAULT_PARTS_BYTES;
                        // SAFETY: as above.
                        let p = unsafe { a_alloc(size) };
                        fill(p, size, seed);
                        assert!(holds(p, size, seed));
                        // SAFETY: as above.
                        unsafe { Allocator.dealloc(p, layout(size)) };
                    }
                });
            }
        });
        release_cached();
        // A buffer about to be read into: prefaulted when large ...
        let mut buf: Vec<u8> = Vec::with_capacity(8 * MIB);
        let before = crate::testing::resident();
        prefault(buf.spare_capacity_mut());
        let grew = crate::testing::resident() - before;
        assert!(grew >= 8 * MIB - 2 * PAGE, "{grew} bytes resident");
        // On a pool of several threads a large one is faulted in in parts,
        // every page of it.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let mut large: Vec<u8> = Vec::with_capacity(PREFAULT_PARTS_BYTES + 5 * PAGE + 7);
        let before = crate::testing::resident();
        pool.install(|| prefault(large.spare_capacity_mut()));
        let grew = crate::testing::resident() - before;
        assert!(grew >= PREFAULT_PARTS_BYTES + 3 * PAGE, "{grew} bytes resident");
        // ... and left alone when small.
        let mut small: Vec<u8> = Vec::with_capacity(PREFAULT_BYTES - PAGE);
        let before = crate::testing::resident();
        prefault(small.spare_capacity_mut());
        assert!(crate::testing::resident().saturating_sub(before) < MIB);
        // A zeroed table read before it is written: reading maps the
        // kernel's zero page, which is not resident; prefaulted, its pages
        // are, and it still reads zero.
        let mut table = vec![0u32; 2 * MIB];
        let before = crate::testing::resident();
        let read: u32 = table.iter().step_by(PAGE / 4).sum();
        let grew = crate::testing::resident().saturating_sub(before);
        assert!(read == 0 && grew < MIB, "{grew} bytes resident");
        prefault(&mut table);
        let grew = crate::testing::resident() - before;
        assert!(grew >= 8 * MIB - 2 * PAGE, "{grew} bytes resident");
        assert!(table.iter().all(|&v| v == 0));
    }
}
