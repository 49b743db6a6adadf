//! The `meshcheck` binary: a thin front over the library's CLI.
//!
//! The allocator is the system one, with one twist on Linux: once the
//! engine or the service asks, freed blocks of 4 MiB or more (vertex, index
//! and edge arrays of large meshes) are kept and reused instead of being
//! handed back and zeroed again by the kernel, and fresh ones are faulted
//! in at once (`memory`'s header). Large blocks are not hinted for huge
//! pages: on a host that takes free memory
//! back (free page reporting), a fresh huge page cost seven times what
//! small pages do to first write (BENCHMARKS.md, "Twenty-second step").
//!
//! glibc's mmap threshold is left to glibc here. A fixed 1 MiB threshold
//! lowered the peak of a 36 MB GLB by about 40 MB but made folder runs of
//! small files 10-20 % slower (every 4 MB UV raster mapped, zeroed and
//! unmapped again); BENCHMARKS.md, "Memory and throughput by size". The
//! service at start, and the engine for any input over 16 MiB, fix it at
//! 4 MiB (`engine::steady_large_blocks`).
//!
//! glibc's malloc keeps up to eight arenas (heaps) per core. The service
//! (`meshcheck serve`) keeps one (`M_ARENA_MAX`): what a job freed on one
//! thread could not be reused by the next job on another, and the freed
//! pages stayed resident in both (250 MB uploads, one after another, peaked
//! about 50 MB above its idle memory with one arena, about 120 MB with
//! glibc's default; docs/blob-store.md). Every other command gets one arena
//! per core: with a single arena the pool threads queue on its lock for the
//! blocks their small-block caches miss (a report's values, the folder
//! output), and a folder of 1,000 small files `--skip SPEC-001` took 0.50 s
//! and 0.82 s of CPU on two cores, against 0.34-0.38 s and 0.67-0.72 s
//! with one arena per core. The peaks of the 32 MB sphere and of s13 were
//! the same either way; the 128 MB sphere's rose by 10-15 MB, to 2.3 times
//! its size (BENCHMARKS.md, "Sixteenth step"). A user
//! who sets the arena count (`MALLOC_ARENA_MAX`, or `arena_max` in
//! `GLIBC_TUNABLES`) keeps it. The choice is the library's
//! (`memory::arena_count`, tested there); `main` applies it.

#[global_allocator]
static ALLOCATOR: meshcheck::memory::Allocator = meshcheck::memory::Allocator;

fn main() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let first = std::env::args_os().nth(1);
        let chosen = meshcheck::memory::arena_count_chosen(|name| std::env::var_os(name));
        if let Some(arenas) = meshcheck::memory::arena_count(first.as_deref(), chosen, cores) {
            // SAFETY: mallopt only sets an allocator parameter; called before
            // any other thread starts (glibc reads the limit when a second
            // thread first needs an arena).
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, arenas.min(libc::c_int::MAX as usize) as libc::c_int);
            }
        }
    }
    std::process::exit(meshcheck::cli::main());
}
