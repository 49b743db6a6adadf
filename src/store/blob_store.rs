//! Where a server keeps its blobs, named by a blob-store URL
//! (`meshcheck serve --blob-store`; docs/blob-store.md):
//!
//! - `file://DIR`: folders, [`DirBlobs`] in `DIR/blobs` and
//!   `DIR/screenshots`. No URL means `file://` on the data folder: the
//!   single-node layout. Folders stay [`DirBlobs`] rather than
//!   `object_store`'s local-file store: the files, their names and their
//!   modification times are the ones a single node has always had, a call
//!   is a plain system call with no runtime behind it, and nothing here
//!   needs a second implementation of the same folder.
//! - `s3://BUCKET[/PREFIX]`: an S3-compatible bucket ([`S3Bucket`]),
//!   objects under `PREFIX/blobs/` and `PREFIX/screenshots/`, settings from
//!   the standard AWS environment variables. The bucket is listed once when
//!   it is opened, so a wrong endpoint, bucket or key fails at start.
//!
//! Any other form is refused, naming the two accepted ones.

use super::s3::S3Bucket;
use super::{Blobs, DirBlobs};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a blob-store URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// `file://DIR`: folders under `DIR`.
    Dir(PathBuf),
    /// `s3://BUCKET[/PREFIX]`.
    S3 {
        /// The bucket.
        bucket: String,
        /// The key prefix, without leading or trailing `/` (empty for none).
        prefix: String,
    },
}

impl Location {
    /// Reads a blob-store URL; an error names the accepted forms.
    pub fn parse(url: &str) -> Result<Location> {
        let refuse = |why: &str| {
            Error::bad_request(format!(
                "blob store {url:?}: {why}; use file://DIR (a folder) or s3://BUCKET[/PREFIX] \
                 (an S3-compatible bucket, configured by the AWS_* environment variables)"
            ))
        };
        if let Some(dir) = url.strip_prefix("file://") {
            if dir.is_empty() {
                return Err(refuse("no folder after file://"));
            }
            return Ok(Location::Dir(PathBuf::from(dir)));
        }
        if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() || !bucket.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
                return Err(refuse("the bucket name is missing or holds characters a bucket name cannot"));
            }
            let prefix = prefix.trim_matches('/');
            if prefix.contains("//") || prefix.split('/').any(|s| s == "." || s == "..") || prefix.contains(['?', '#'])
            {
                return Err(refuse("the key prefix has an empty, '.' or '..' segment, or a '?' or '#'"));
            }
            return Ok(Location::S3 { bucket: bucket.to_string(), prefix: prefix.to_string() });
        }
        Err(refuse("unsupported scheme"))
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::Dir(dir) => write!(f, "file://{}", dir.display()),
            Location::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// The server's two blob stores.
pub struct BlobStores {
    /// Transient input bytes: `blobs`.
    pub blobs: Arc<dyn Blobs>,
    /// Stored stills and turntables: `screenshots`.
    pub shots: Arc<dyn Blobs>,
}

/// Opens the blob stores `url` names, `file://` on `data_dir` when there is
/// none (folders are created; a bucket is listed once to prove it answers).
pub fn open(url: Option<&str>, data_dir: &Path) -> Result<BlobStores> {
    let location = match url {
        Some(url) => Location::parse(url)?,
        None => Location::Dir(data_dir.to_path_buf()),
    };
    match &location {
        Location::Dir(dir) => {
            let folder = |name: &str| {
                DirBlobs::new(dir.join(name))
                    .map_err(|e| Error::internal(format!("cannot create {}: {e}", dir.join(name).display())))
            };
            Ok(BlobStores { blobs: Arc::new(folder("blobs")?), shots: Arc::new(folder("screenshots")?) })
        }
        Location::S3 { bucket, prefix } => {
            let cannot = |e: std::io::Error| Error::bad_request(format!("blob store {location}: {e}"));
            let bucket = S3Bucket::from_env(bucket, prefix).map_err(cannot)?;
            bucket.check().map_err(cannot)?;
            Ok(BlobStores { blobs: Arc::new(bucket.blobs("blobs")), shots: Arc::new(bucket.blobs("screenshots")) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_a_folder_or_a_bucket_and_nothing_else() {
        assert_eq!(Location::parse("file:///srv/meshcheck").unwrap(), Location::Dir("/srv/meshcheck".into()));
        assert_eq!(Location::parse("file://data").unwrap(), Location::Dir("data".into()));
        assert_eq!(
            Location::parse("s3://my-bucket").unwrap(),
            Location::S3 { bucket: "my-bucket".into(), prefix: String::new() }
        );
        let nested = Location::parse("s3://b.1/tenants/eu/").unwrap();
        assert_eq!(nested, Location::S3 { bucket: "b.1".into(), prefix: "tenants/eu".into() });
        assert_eq!(nested.to_string(), "s3://b.1/tenants/eu");
        for bad in
            ["gs://bucket", "http://minio:9000/bucket", "/srv/data", "file://", "s3://", "s3:///p", "s3://b/a//c"]
        {
            let e = Location::parse(bad).unwrap_err();
            assert!(e.message.contains("file://DIR") && e.message.contains("s3://BUCKET[/PREFIX]"), "{bad}: {e:?}");
        }
        assert!(Location::parse("s3://b/../x").is_err());
    }

    #[test]
    fn no_url_is_the_data_folder_layout() {
        let dir = tempfile::tempdir().unwrap();
        let stores = open(None, dir.path()).unwrap();
        stores.blobs.put("blob_a", b"input").unwrap();
        stores.shots.put("shot_a", b"png").unwrap();
        assert_eq!(std::fs::read(dir.path().join("blobs/blob_a")).unwrap(), b"input");
        assert_eq!(std::fs::read(dir.path().join("screenshots/shot_a")).unwrap(), b"png");
        let elsewhere = tempfile::tempdir().unwrap();
        let url = format!("file://{}", elsewhere.path().display());
        open(Some(&url), dir.path()).unwrap().blobs.put("blob_b", b"x").unwrap();
        assert!(elsewhere.path().join("blobs/blob_b").is_file());
    }
}
