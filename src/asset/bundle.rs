//! Where a document's external resources come from: a folder on disk, a zip
//! bundle held in memory, or nowhere (a lone GLB uploaded to the service).
//!
//! Zip bundles are opened defensively: absolute paths, `..` segments and
//! links are refused, and the entry count, total uncompressed bytes and
//! compression ratio are capped before anything is inflated; the sizes the
//! headers declare are then enforced while reading, since headers can lie.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Most entries a zip bundle may hold.
pub const MAX_ZIP_ENTRIES: usize = 10_000;
/// Most uncompressed bytes a zip bundle may hold in all.
pub const MAX_ZIP_TOTAL_BYTES: u64 = 1 << 30;
/// Highest compression ratio allowed for an entry, and for the whole bundle,
/// once it inflates to more than [`RATIO_FLOOR_BYTES`].
pub const MAX_ZIP_RATIO: u64 = 200;
/// Inflated size under which the ratio is not judged: small entries cannot
/// bomb, and real assets hold small, highly compressible buffers (a 1.5 MB
/// run of restart indices compresses 985:1 in the Khronos asset generator).
pub const RATIO_FLOOR_BYTES: u64 = 8 << 20;
/// Largest single external file read from disk.
pub const MAX_RESOURCE_BYTES: u64 = 1 << 30;

/// Why a resource could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No such file in the folder or bundle.
    NotFound,
    /// The URI is remote or absolute and is never fetched.
    NotFetched,
    /// The URI escapes the bundle or folder, or cannot be decoded.
    Refused(String),
    /// Reading failed.
    Io(String),
}

impl Unresolved {
    /// One phrase for reports.
    pub fn reason(&self) -> String {
        match self {
            Unresolved::NotFound => "not found".into(),
            Unresolved::NotFetched => "remote or absolute URIs are not fetched".into(),
            Unresolved::Refused(why) => why.clone(),
            Unresolved::Io(e) => format!("could not be read: {e}"),
        }
    }
}

/// A source of external resources, addressed by paths relative to the main file.
pub trait Resolver: Send + Sync {
    /// The bytes of `path`, a percent-decoded, normalised relative path.
    fn fetch(&self, path: &str) -> std::result::Result<Vec<u8>, Unresolved>;

    /// The folder resources are read from, when they are files on disk (a
    /// render worker given the same folder resolves them the same way).
    fn base_dir(&self) -> Option<&std::path::Path> {
        None
    }

    /// `path` as a plain file on disk that [`Resolver::fetch`] would read,
    /// with its size, when resources are files; `None` otherwise (then
    /// `fetch` says why). Lets another reader (the validator's Node process)
    /// open the same file under the same rules.
    fn file(&self, _path: &str) -> Option<(PathBuf, u64)> {
        None
    }
}

/// No external resources at all.
pub struct NoResources;

impl Resolver for NoResources {
    fn fetch(&self, _path: &str) -> std::result::Result<Vec<u8>, Unresolved> {
        Err(Unresolved::NotFound)
    }
}

/// Files beside a .gltf on disk.
pub struct DirResolver {
    base: PathBuf,
}

impl DirResolver {
    /// Resolves against `base`, the folder holding the .gltf.
    pub fn new(base: impl Into<PathBuf>) -> Self {
        DirResolver { base: base.into() }
    }
}

impl Resolver for DirResolver {
    fn base_dir(&self) -> Option<&std::path::Path> {
        Some(&self.base)
    }

    fn fetch(&self, path: &str) -> std::result::Result<Vec<u8>, Unresolved> {
        let (full, _) = self.admit(path)?;
        std::fs::read(&full).map_err(|e| Unresolved::Io(e.to_string()))
    }

    fn file(&self, path: &str) -> Option<(PathBuf, u64)> {
        self.admit(path).ok()
    }
}

impl DirResolver {
    /// The rule a resource file passes: a plain file (links followed) of at
    /// most [`MAX_RESOURCE_BYTES`]; its full path and size.
    fn admit(&self, path: &str) -> std::result::Result<(PathBuf, u64), Unresolved> {
        let full = self.base.join(path);
        let meta = std::fs::metadata(&full).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Unresolved::NotFound,
            _ => Unresolved::Io(e.to_string()),
        })?;
        if !meta.is_file() {
            return Err(Unresolved::NotFound);
        }
        if meta.len() > MAX_RESOURCE_BYTES {
            return Err(Unresolved::Refused(format!("{} bytes is over the 1 GiB resource limit", meta.len())));
        }
        Ok((full, meta.len()))
    }
}

/// A zip bundle, inflated under limits into memory.
pub struct ZipBundle {
    files: BTreeMap<String, Vec<u8>>,
    /// Path of the .gltf or .glb inside the bundle.
    pub main_file: String,
}

impl ZipBundle {
    /// Opens and checks a zip, picks its main file and inflates its entries.
    pub fn open(bytes: &[u8]) -> Result<ZipBundle> {
        let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| Error::unsupported(format!("the zip archive cannot be read: {e}")))?;
        if archive.len() > MAX_ZIP_ENTRIES {
            return Err(refuse(format!(
                "the zip holds {} entries, over the limit of {MAX_ZIP_ENTRIES}",
                archive.len()
            )));
        }
        let mut entries = Vec::new();
        let mut declared_total: u64 = 0;
        let mut compressed_total: u64 = 0;
        for i in 0..archive.len() {
            let file = archive
                .by_index_raw(i)
                .map_err(|e| Error::unsupported(format!("zip entry {i} cannot be read: {e}")))?;
            let name = file
                .name()
                .map_err(|e| Error::unsupported(format!("zip entry {i} has an unreadable name: {e}")))?
                .to_string();
            check_entry_name(&name)?;
            if file.is_symlink() {
                return Err(refuse(format!("zip entry `{name}` is a link; bundles may not hold links")));
            }
            if file.is_dir() {
                continue;
            }
            let size = file.size();
            let compressed = file.compressed_size();
            if size > RATIO_FLOOR_BYTES && size / compressed.max(1) > MAX_ZIP_RATIO {
                return Err(refuse(format!(
                    "zip entry `{name}` inflates {compressed} bytes to {size}, over the {MAX_ZIP_RATIO}:1 ratio limit"
                )));
            }
            declared_total = declared_total.saturating_add(size);
            compressed_total = compressed_total.saturating_add(compressed);
            if declared_total > MAX_ZIP_TOTAL_BYTES {
                return Err(refuse(format!("the zip inflates to more than {MAX_ZIP_TOTAL_BYTES} bytes")));
            }
            entries.push((i, name, size));
        }
        // Entries of a real zip do not overlap, so their compressed sizes sum to
        // less than the archive; headers that claim more are lying, and the
        // ratio below would be judged against bytes that are not there.
        if compressed_total > bytes.len() as u64 {
            return Err(refuse(format!(
                "the zip's entries claim {compressed_total} compressed bytes in an archive of {} bytes (overlapping or lying entries)",
                bytes.len()
            )));
        }
        if declared_total > RATIO_FLOOR_BYTES && declared_total / compressed_total.max(1) > MAX_ZIP_RATIO {
            return Err(refuse(format!(
                "the zip inflates {compressed_total} bytes to {declared_total}, over the {MAX_ZIP_RATIO}:1 ratio limit"
            )));
        }
        let main_file = pick_main(entries.iter().map(|(_, n, _)| n.as_str()))
            .ok_or_else(|| {
                Error::incomplete("the zip bundle holds no .gltf or .glb file")
                    .with_help("put the .gltf (or .glb) and its resources in the zip")
            })?
            .to_string();
        let mut files = BTreeMap::new();
        for (i, name, size) in entries {
            let file = archive
                .by_index(i)
                .map_err(|e| Error::unsupported(format!("zip entry `{name}` cannot be inflated: {e}")))?;
            let mut buf = Vec::with_capacity(size.min(1 << 26) as usize);
            file.take(size + 1)
                .read_to_end(&mut buf)
                .map_err(|e| Error::unsupported(format!("zip entry `{name}` cannot be inflated: {e}")))?;
            if buf.len() as u64 != size {
                return Err(refuse(format!(
                    "zip entry `{name}` declares {size} bytes but inflates to a different size"
                )));
            }
            files.insert(name, buf);
        }
        Ok(ZipBundle { files, main_file })
    }

    /// Removes and returns the main file's bytes.
    pub fn take_main(&mut self) -> Vec<u8> {
        self.files.remove(&self.main_file).unwrap_or_default()
    }

    /// The folder of the main file inside the bundle ("" at the root).
    pub fn main_dir(&self) -> String {
        match self.main_file.rfind('/') {
            Some(i) => self.main_file[..i].to_string(),
            None => String::new(),
        }
    }

    /// A resolver for paths relative to the main file.
    pub fn into_resolver(self) -> ZipResolver {
        let base = self.main_dir();
        ZipResolver { files: self.files, base }
    }
}

/// Resolves paths against a folder inside a zip bundle.
pub struct ZipResolver {
    files: BTreeMap<String, Vec<u8>>,
    base: String,
}

impl Resolver for ZipResolver {
    fn fetch(&self, path: &str) -> std::result::Result<Vec<u8>, Unresolved> {
        let joined = if self.base.is_empty() { path.to_string() } else { format!("{}/{}", self.base, path) };
        let normal = normalise(&joined).ok_or_else(|| Unresolved::Refused("the path leaves the bundle".into()))?;
        self.files.get(&normal).cloned().ok_or(Unresolved::NotFound)
    }
}

fn refuse(message: String) -> Error {
    Error::unsupported(message).with_help("repack the bundle as a plain zip of the .gltf and its resources")
}

fn check_entry_name(name: &str) -> Result<()> {
    let bad = name.starts_with('/')
        || name.starts_with('\\')
        || name.as_bytes().get(1) == Some(&b':')
        || name.split(['/', '\\']).any(|seg| seg == "..")
        || name.contains('\0');
    if bad {
        return Err(refuse(format!("zip entry `{name}` has an absolute path or a `..` segment")));
    }
    Ok(())
}

/// Collapses `.` and `..` segments; `None` when the path would leave the root.
pub fn normalise(path: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    Some(out.join("/"))
}

fn is_ignored(name: &str) -> bool {
    name.starts_with("__MACOSX/") || name.rsplit('/').next().is_some_and(|b| b.starts_with('.'))
}

/// The main file of a bundle: the shallowest .gltf (then .glb), ties broken by name.
fn pick_main<'a>(names: impl Iterator<Item = &'a str> + Clone) -> Option<&'a str> {
    let pick = |ext: &str| {
        names
            .clone()
            .filter(|n| !is_ignored(n) && n.to_ascii_lowercase().ends_with(ext))
            .min_by_key(|n| (n.matches('/').count(), n.to_string()))
    };
    pick(".gltf").or_else(|| pick(".glb"))
}

/// A parsed `data:` URI's bytes, or why it cannot be decoded.
pub fn decode_data_uri(uri: &str) -> std::result::Result<Vec<u8>, String> {
    use base64::Engine;
    let rest = uri.strip_prefix("data:").ok_or("not a data: URI")?;
    let (meta, data) = rest.split_once(',').ok_or("the data: URI has no comma")?;
    if meta.ends_with(";base64") {
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| format!("invalid base64 in data: URI: {e}"))
    } else {
        Ok(percent_encoding::percent_decode_str(data).collect())
    }
}

/// The media type of a `data:` URI ("" when none is given).
pub fn data_uri_mime(uri: &str) -> &str {
    uri.strip_prefix("data:").and_then(|r| r.split([';', ',']).next()).unwrap_or("")
}

/// How a URI found in the document is to be resolved.
pub enum UriKind {
    /// An embedded `data:` URI.
    Data,
    /// A relative path (percent-decoded, normalised).
    Relative(String),
    /// Remote, absolute, or not decodable.
    Unfetchable(Unresolved),
}

/// Classifies a URI from the document.
pub fn classify_uri(uri: &str) -> UriKind {
    if uri.starts_with("data:") {
        return UriKind::Data;
    }
    let has_scheme = uri
        .find(':')
        .is_some_and(|c| uri[..c].chars().all(|ch| ch.is_ascii_alphanumeric() || "+-.".contains(ch)) && c > 1);
    if has_scheme || uri.starts_with('/') || uri.starts_with('\\') {
        return UriKind::Unfetchable(Unresolved::NotFetched);
    }
    let decoded = match percent_encoding::percent_decode_str(uri).decode_utf8() {
        Ok(s) => s.into_owned(),
        Err(_) => return UriKind::Unfetchable(Unresolved::Refused("the URI is not valid UTF-8 once decoded".into())),
    };
    // Query and fragment parts are not part of a file name.
    let path = decoded.split(['?', '#']).next().unwrap_or("").to_string();
    UriKind::Relative(path)
}

/// The folder of a path on disk, for resolving a .gltf's siblings.
pub fn parent_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).filter(|p| !p.as_os_str().is_empty()).unwrap_or_else(|| PathBuf::from("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_refuses_escapes() {
        assert_eq!(normalise("a/./b/../c.bin").as_deref(), Some("a/c.bin"));
        assert_eq!(normalise("../x"), None);
    }

    #[test]
    fn uri_kinds() {
        assert!(matches!(classify_uri("data:application/octet-stream;base64,AAAA"), UriKind::Data));
        assert!(matches!(classify_uri("https://example.com/a.bin"), UriKind::Unfetchable(_)));
        assert!(matches!(classify_uri("/etc/passwd"), UriKind::Unfetchable(_)));
        match classify_uri("tex%20ture.png") {
            UriKind::Relative(p) => assert_eq!(p, "tex ture.png"),
            _ => panic!("relative"),
        }
    }

    #[test]
    fn data_uris_decode() {
        assert_eq!(decode_data_uri("data:application/octet-stream;base64,AAEC").unwrap(), vec![0, 1, 2]);
        assert_eq!(decode_data_uri("data:,a%20b").unwrap(), b"a b".to_vec());
        assert!(decode_data_uri("data:;base64,@@@").is_err());
        assert_eq!(data_uri_mime("data:image/png;base64,xx"), "image/png");
    }

    #[test]
    fn main_file_is_shallowest_gltf() {
        let names = ["b/deep/x.gltf", "a.glb", "z.gltf", "__MACOSX/._z.gltf"];
        assert_eq!(pick_main(names.iter().copied()), Some("z.gltf"));
        let names = ["a.glb", "b/c.glb"];
        assert_eq!(pick_main(names.iter().copied()), Some("a.glb"));
    }
}
