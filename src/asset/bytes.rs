//! An input's bytes: held in memory ([`Bytes::Owned`]: an upload, standard
//! input, a bundle's main file, a small file) or, for a large file on disk,
//! the file itself mapped read-only ([`Bytes::Mapped`], on Unix).
//!
//! **Why map.** Reading a file copies it from the page cache into a fresh
//! buffer, and on this project's machines fresh memory is the dear part: the
//! kernel zeroes every new page before the copy fills it, and a page the
//! virtual machine had handed back to its host costs a fault on the host as
//! well. Reading a 36.5 MB GLB took 8-66 ms where mapping it and reading
//! every page took 2-4 ms (BENCHMARKS.md, "Twentieth step"), and that read is
//! the first thing on a large file's critical path. A mapping shares the page
//! cache's own pages: nothing is zeroed or copied, and the memory it counts
//! in the process's resident size is the same as the buffer's was.
//!
//! **The trade, as ripgrep makes it.** A mapped file that another process
//! truncates while meshcheck reads it ends the process with SIGBUS, where a
//! read would have seen the shorter file. Only files of at least
//! [`MAP_MIN_BYTES`] are mapped (below that a read is as fast), and only
//! the files the CLI reads ([`crate::asset::Input::from_path`]; the
//! service's uploads and blobs arrive as bytes); a file that changes while
//! it is being validated has no meaningful report either way. docs/inputs.md
//! says so.

use std::ops::Deref;

/// Files at least this large are mapped rather than read (see the module's
/// header): below it, a read costs less than setting up a mapping.
pub const MAP_MIN_BYTES: u64 = 1 << 20;

/// An input's bytes (see the module's header).
pub enum Bytes {
    /// Bytes in memory of the process's own.
    Owned(Vec<u8>),
    /// A file mapped read-only.
    #[cfg(unix)]
    Mapped(Mapping),
}

impl Bytes {
    /// The file at `path`: mapped when it is at least [`MAP_MIN_BYTES`] (on
    /// Unix, and where the system allows it), read into memory otherwise.
    pub fn read(path: &std::path::Path) -> std::io::Result<Bytes> {
        let mut file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        #[cfg(unix)]
        if len >= MAP_MIN_BYTES
            && let Ok(len) = usize::try_from(len)
            && let Some(m) = Mapping::of(&file, len)
        {
            return Ok(Bytes::Mapped(m));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        std::io::Read::read_to_end(&mut file, &mut bytes)?;
        Ok(Bytes::Owned(bytes))
    }

    /// Whether the bytes are a mapped file.
    pub fn is_mapped(&self) -> bool {
        match self {
            Bytes::Owned(_) => false,
            #[cfg(unix)]
            Bytes::Mapped(_) => true,
        }
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::Owned(v)
    }
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Owned(v) => v,
            #[cfg(unix)]
            Bytes::Mapped(m) => m.as_slice(),
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let how = if self.is_mapped() { "mapped" } else { "owned" };
        write!(f, "Bytes({how}, {} bytes)", self.len())
    }
}

/// A whole file mapped read-only and private; unmapped when dropped.
#[cfg(unix)]
pub struct Mapping {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value alone; reading
// it from several threads at once is reading shared immutable memory.
#[cfg(unix)]
unsafe impl Send for Mapping {}
// SAFETY: as for Send: `&Mapping` only ever reads.
#[cfg(unix)]
unsafe impl Sync for Mapping {}

#[cfg(unix)]
impl Mapping {
    /// `file`'s first `len` bytes (its length, `len > 0`) mapped; `None`
    /// when the system refuses (the caller reads the file instead).
    fn of(file: &std::fs::File, len: usize) -> Option<Mapping> {
        use std::os::fd::AsRawFd;
        if len == 0 {
            return None;
        }
        // Linux maps every page at once (the file is read through once by
        // the parse and the hash anyway): one call, not a fault a page.
        #[cfg(target_os = "linux")]
        let flags = libc::MAP_PRIVATE | libc::MAP_POPULATE;
        #[cfg(not(target_os = "linux"))]
        let flags = libc::MAP_PRIVATE;
        // SAFETY: a new read-only private mapping of an open file; it aliases
        // no memory of the process's, and the descriptor may be closed once
        // it is made.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, flags, file.as_raw_fd(), 0) };
        (p != libc::MAP_FAILED).then(|| Mapping { ptr: p.cast::<u8>().cast_const(), len })
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live read-only mapping of `len` bytes until drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

#[cfg(unix)]
impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `of`, handed out no longer.
        unsafe {
            libc::munmap(self.ptr.cast_mut().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("meshcheck-bytes-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_large_file_is_mapped_and_reads_as_the_file() {
        let want: Vec<u8> = (0..MAP_MIN_BYTES as usize + 4097).map(|i| (i * 31 % 251) as u8).collect();
        let path = temp_file("large.bin", &want);
        let got = Bytes::read(&path).unwrap();
        assert_eq!(got.is_mapped(), cfg!(unix));
        assert_eq!(&got[..], &want[..]);
        // Shared across threads, as the hash and the parse read it.
        let got = std::sync::Arc::new(got);
        let other = std::thread::spawn({
            let got = got.clone();
            move || got.iter().map(|&b| b as u64).sum::<u64>()
        });
        assert_eq!(other.join().unwrap(), want.iter().map(|&b| b as u64).sum::<u64>());
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn small_and_empty_files_are_read() {
        for (name, want) in [("small.bin", vec![7u8; 1000]), ("empty.bin", Vec::new())] {
            let path = temp_file(name, &want);
            let got = Bytes::read(&path).unwrap();
            assert!(!got.is_mapped());
            assert_eq!(&got[..], &want[..]);
            std::fs::remove_file(path).unwrap();
        }
        assert!(Bytes::read(std::path::Path::new("/no/such/meshcheck/file")).is_err());
    }
}
