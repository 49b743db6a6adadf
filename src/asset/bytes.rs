//! An input's bytes ([`Bytes`]): a block the program owns (an upload, a
//! zip entry, a small file read whole) or, for a large regular file on
//! Linux, the file mapped read-only ([`Bytes::read_file`]).
//!
//! **Why map.** Reading a file whole first has the kernel fault in and
//! zero a block of the file's size, then copies the file into it: on s13
//! (36.5 MB) 26 ms of populating and 9 ms of reading, on one core, before
//! anything else can start (BENCHMARKS.md, "Twenty-sixth step"). A file in
//! the page cache is already in memory: mapping it (its pages entered at
//! once rather than faulted one read at a time: by `MAP_POPULATE`, or from
//! 8 MiB in two halves side by side on the pool) gives the same bytes with
//! no copy and no fresh pages. The mapped
//! pages count in the process's resident size as the copy did, so the peak
//! is unchanged.
//!
//! **When.** Only regular files of at least [`MAP_AT_LEAST`] bytes (256
//! KiB): below it a read costs about as much as a mapping, and a small
//! file's bytes are few. From it up a mapping also costs the peak less: a
//! file held for SPEC-001 lets its pages go once loaded
//! ([`Bytes::release_resident`]), where a block read whole stays resident
//! beside the checks (the 1 MB sphere's default run: BENCHMARKS.md,
//! "Thirty-second step"). Every other input (a pipe, standard input, a
//! small file, every platform but Linux) is read whole.
//!
//! **What it risks.** A mapped file that another process truncates while
//! it is read ends the process with SIGBUS, where a read would have seen a
//! short or changed file. This is the trade ripgrep makes for single large
//! files; meshcheck makes it for files it was pointed at, which nothing is
//! expected to rewrite while they are checked. `MESHCHECK_NO_MMAP=1`
//! (any value but `0`) reads every file instead.

use std::ops::Deref;

/// Regular files at least this large are mapped rather than read (Linux).
pub const MAP_AT_LEAST: u64 = 256 << 10;

/// An input's bytes, owned or mapped; either way a `[u8]`.
pub enum Bytes {
    /// A block the program owns.
    Owned(Vec<u8>),
    /// A file mapped read-only.
    #[cfg(target_os = "linux")]
    Mapped(Mapping),
}

impl Bytes {
    /// The file's bytes: mapped when it is a regular file of at least
    /// [`MAP_AT_LEAST`] bytes on Linux (and `MESHCHECK_NO_MMAP` is not
    /// set), otherwise read whole into a block of its size whose pages are
    /// faulted in at once ([`crate::memory::prefault`]).
    pub fn read_file(file: &mut std::fs::File) -> std::io::Result<Bytes> {
        Bytes::read_file_with(file, !mapping_refused())
    }

    /// [`Bytes::read_file`], mapping only when `map` says it may.
    pub fn read_file_with(file: &mut std::fs::File, map: bool) -> std::io::Result<Bytes> {
        use std::io::Read;
        let meta = file.metadata()?;
        let size = meta.len();
        #[cfg(not(target_os = "linux"))]
        let _ = map;
        #[cfg(target_os = "linux")]
        if map
            && meta.is_file()
            && size >= MAP_AT_LEAST
            && let Some(m) = Mapping::of(file, size)
        {
            return Ok(Bytes::Mapped(m));
        }
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::OutOfMemory, "the file is larger than memory"))?;
        crate::memory::prefault(bytes.spare_capacity_mut());
        file.read_to_end(&mut bytes)?;
        Ok(Bytes::Owned(bytes))
    }

    /// Whether the bytes are a mapped file.
    pub fn is_mapped(&self) -> bool {
        match self {
            Bytes::Owned(_) => false,
            #[cfg(target_os = "linux")]
            Bytes::Mapped(_) => true,
        }
    }

    /// Lets the pages of mapped bytes go from this process's resident
    /// memory, keeping the bytes: a read after it faults them back in from
    /// the file, unchanged (the mapping is private and never written, so
    /// what it reads is the file's own pages in the page cache). For the
    /// input of a SPEC-001 run whose bytes are held only in case the
    /// validator cannot read the file as announced: once the asset is
    /// loaded nothing else reads them, and resident they added the file's
    /// whole size to the checks' peak (the 8 MB sphere's default run: 41.2
    /// against 34.6 MB without SPEC-001; BENCHMARKS.md, "Thirty-first
    /// step"). Owned bytes stay as they are: their pages are the only copy.
    pub fn release_resident(&self) {
        #[cfg(target_os = "linux")]
        if let Bytes::Mapped(m) = self {
            m.release_resident();
        }
    }

    /// The bytes as an owned block (a copy when they are mapped).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Bytes::Owned(v) => v,
            #[cfg(target_os = "linux")]
            Bytes::Mapped(m) => m.to_vec(),
        }
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            #[cfg(target_os = "linux")]
            Bytes::Mapped(m) => m,
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::Owned(v)
    }
}

impl Clone for Bytes {
    /// A clone owns its bytes (a mapping is copied).
    fn clone(&self) -> Bytes {
        Bytes::Owned(self.to_vec())
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Bytes({} bytes, {how})", self.len())
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        **self == **other
    }
}

/// Whether `MESHCHECK_NO_MMAP` asks for every file to be read.
fn mapping_refused() -> bool {
    std::env::var_os("MESHCHECK_NO_MMAP").is_some_and(|v| v != "0")
}

/// A file mapped read-only and private, unmapped when dropped.
#[cfg(target_os = "linux")]
pub struct Mapping {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading
// it from several threads is reading immutable memory.
#[cfg(target_os = "linux")]
unsafe impl Send for Mapping {}
// SAFETY: as above: `&Mapping` only reads.
#[cfg(target_os = "linux")]
unsafe impl Sync for Mapping {}

#[cfg(target_os = "linux")]
impl Mapping {
    /// Maps `size` bytes of `file` (`size` > 0), its pages entered at once;
    /// `None` when the kernel refuses (the file system cannot map, say),
    /// and the caller reads instead.
    ///
    /// From [`POPULATE_IN_HALVES_FROM`] bytes, on a pool of several threads,
    /// the pages are entered in two halves side by side
    /// (`MADV_POPULATE_READ`) rather than by the mapping call on one
    /// thread: s13's 36.5 MB took 6-7 ms on one core before the hash and
    /// the parse could start (BENCHMARKS.md, "Fortieth step"). A kernel
    /// older than 5.14 refuses the advice, and the pages are then faulted
    /// in as they are read, which gives the same bytes.
    fn of(file: &std::fs::File, size: u64) -> Option<Mapping> {
        use std::os::fd::AsRawFd;
        let len = usize::try_from(size).ok().filter(|&l| l > 0)?;
        let halves = len >= POPULATE_IN_HALVES_FROM && rayon::current_num_threads() > 1;
        let populate = if halves { 0 } else { libc::MAP_POPULATE };
        // SAFETY: a fresh private read-only mapping of an open file; the
        // kernel chooses the address, so nothing the program holds is
        // touched. A failure is MAP_FAILED, checked below.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE | populate, file.as_raw_fd(), 0)
        };
        if ptr == libc::MAP_FAILED {
            return None;
        }
        let mapping = Mapping { ptr: std::ptr::NonNull::new(ptr.cast::<u8>())?, len };
        if halves {
            // SAFETY: the whole of this live read-only mapping, held here.
            unsafe { crate::memory::populate(mapping.ptr.as_ptr() as usize, len, crate::memory::Entry::Read, 2) };
        }
        Some(mapping)
    }
}

/// Mappings at least this large are populated in two halves side by side
/// (`Mapping::of`).
#[cfg(target_os = "linux")]
pub const POPULATE_IN_HALVES_FROM: usize = 8 << 20;

#[cfg(target_os = "linux")]
impl Mapping {
    /// [`Bytes::release_resident`] for a mapping.
    fn release_resident(&self) {
        // SAFETY: `ptr` is this live mapping of `len` bytes. MADV_DONTNEED
        // on a private read-only file mapping drops its page-table entries
        // only: the next read of a page faults it in again from the file,
        // with the same bytes, so every slice of the mapping stays valid.
        unsafe {
            libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_DONTNEED);
        }
    }
}

#[cfg(target_os = "linux")]
impl Deref for Mapping {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` is a live mapping of `len` readable bytes, unmapped
        // only on drop, and never written (PROT_READ).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `of`, unmapped once; no slice of it
        // outlives `self` (they borrow it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_of(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("f.bin");
        std::fs::File::create(&path).and_then(|mut f| f.write_all(bytes)).expect("write");
        (dir, path)
    }

    #[test]
    fn a_large_file_is_mapped_and_reads_as_its_bytes() {
        let body: Vec<u8> = (0..MAP_AT_LEAST as usize + 4099).map(|i| (i * 31 % 251) as u8).collect();
        let (_dir, path) = file_of(&body);
        let bytes = Bytes::read_file(&mut std::fs::File::open(&path).expect("open")).expect("read");
        assert_eq!(bytes.is_mapped(), cfg!(target_os = "linux"));
        assert_eq!(&bytes[..], &body[..]);
        let copy = bytes.clone();
        assert!(!copy.is_mapped());
        assert_eq!(copy, bytes);
        assert_eq!(bytes.into_vec(), body);
        let read = Bytes::read_file_with(&mut std::fs::File::open(&path).expect("open"), false).expect("read");
        assert!(!read.is_mapped());
        assert_eq!(&read[..], &body[..]);
    }

    /// Resident kilobytes of the mapping that starts at `addr`
    /// (`/proc/self/smaps`: the first `Rss:` line after its header is its own).
    #[cfg(target_os = "linux")]
    fn resident_kb_at(addr: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let start = format!("{addr:x}-");
        let mut block = smaps.split('\n').skip_while(|l| !l.starts_with(&start)).skip(1);
        let rss = block.find(|l| l.starts_with("Rss:"));
        rss.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).expect("the mapping's Rss")
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_mapped_in_halves_is_resident_before_it_is_read() {
        // Large enough to be populated in two halves, and an odd length, so
        // that the second half ends inside a page.
        let len = POPULATE_IN_HALVES_FROM + 3 * 4096 + 17;
        let body: Vec<u8> = (0..len).map(|i| (i * 13 % 241) as u8).collect();
        let (_dir, path) = file_of(&body);
        let bytes = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("a pool of two")
            .install(|| Bytes::read_file(&mut std::fs::File::open(&path).expect("open")).expect("read"));
        assert!(bytes.is_mapped());
        let resident = resident_kb_at(bytes.as_ptr() as usize) * 1024;
        assert!(resident >= len as u64, "both halves entered before any read: {resident} of {len} bytes");
        assert_eq!(&bytes[..], &body[..]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn mapped_bytes_let_go_of_their_pages_and_read_the_same_after() {
        let body: Vec<u8> = (0..MAP_AT_LEAST as usize + 3 * 4096 + 5).map(|i| (i * 7 % 253) as u8).collect();
        let (_dir, path) = file_of(&body);
        let bytes = Bytes::read_file(&mut std::fs::File::open(&path).expect("open")).expect("read");
        assert!(bytes.is_mapped());
        let addr = bytes.as_ptr() as usize;
        assert_eq!(&bytes[..], &body[..]);
        let before = resident_kb_at(addr);
        assert!(before * 1024 >= MAP_AT_LEAST, "entered at once: {before} KiB resident");
        bytes.release_resident();
        assert_eq!(resident_kb_at(addr), 0, "every page let go");
        assert_eq!(&bytes[..], &body[..], "the same bytes, read again from the file");
        assert!(resident_kb_at(addr) * 1024 >= MAP_AT_LEAST, "faulted back in by the read");
        // Owned bytes keep their pages (the only copy).
        let owned = Bytes::from(body.clone());
        owned.release_resident();
        assert_eq!(&owned[..], &body[..]);
    }

    #[test]
    fn small_and_empty_files_are_read() {
        for len in [0usize, 1, 4096, MAP_AT_LEAST as usize - 1] {
            let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let (_dir, path) = file_of(&body);
            let bytes = Bytes::read_file(&mut std::fs::File::open(&path).expect("open")).expect("read");
            assert!(!bytes.is_mapped(), "{len} bytes");
            assert_eq!(&bytes[..], &body[..]);
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_mapped_file_keeps_its_bytes_after_it_is_removed() {
        let body = vec![7u8; MAP_AT_LEAST as usize];
        let (dir, path) = file_of(&body);
        let bytes = Bytes::read_file(&mut std::fs::File::open(&path).expect("open")).expect("read");
        std::fs::remove_file(&path).expect("remove");
        drop(dir);
        assert!(bytes.is_mapped());
        assert!(bytes.iter().all(|&b| b == 7));
    }
}
