//! Blobs in an S3-compatible bucket, over the `object_store` crate:
//! [`S3Bucket`] is one connection (bucket, key prefix, client), and
//! [`S3Bucket::blobs`] a [`Blobs`] under one folder of it (the server uses
//! `PREFIX/blobs/` and `PREFIX/screenshots/`).
//!
//! - **Configuration** is the standard AWS environment, read by
//!   `AmazonS3Builder::from_env`: `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`) for
//!   a store other than AWS, `AWS_REGION`, `AWS_ACCESS_KEY_ID`,
//!   `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ALLOW_HTTP=true` for
//!   a plain-HTTP endpoint; without keys, the instance's or task's role.
//! - **Synchronous over async.** The trait is synchronous and its callers run
//!   on a tokio worker thread, on the blocking pool, or on no runtime at all,
//!   so the bucket owns a small runtime of its own (two threads) and every
//!   call spawns its future there and waits for the answer on a std channel.
//!   `Runtime::block_on` is never used: it panics on a thread that is
//!   already inside a runtime.
//! - **Streaming writes.** A writer gathers up to 8 MiB in the caller's
//!   thread. A blob that ends below that is one conditional PUT
//!   (`If-None-Match: *`: an existing blob is never replaced). A larger one
//!   becomes a multipart upload of 8 MiB parts, at most two in flight, so a
//!   writer buffers at most three parts (24 MiB) whatever the blob's size;
//!   `finish` checks that the key is still free (a HEAD: `object_store` has
//!   no conditional completion) and completes it. A writer dropped
//!   unfinished aborts its multipart upload in the background (nothing was
//!   visible). An upload the process never aborts (a crash) is left to the
//!   bucket's lifecycle rule for incomplete multipart uploads
//!   (docs/blob-store.md).
//! - **Errors** keep their kind where it matters: a missing key is
//!   `NotFound`, a taken one `AlreadyExists`; ids other than
//!   `[A-Za-z0-9_]+` are refused before any request.

use super::{BlobWriter, Blobs, check_blob_id, is_blob_id};
use bytes::Bytes;
use futures_util::StreamExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};
use std::future::Future;
use std::io;
use std::sync::Arc;

/// Bytes gathered before a blob becomes a multipart upload, and the size of
/// each part (S3 wants at least 5 MiB for every part but the last).
const PART: usize = 8 << 20;
/// Parts of one upload in flight at once.
const IN_FLIGHT: usize = 2;

/// The client and the runtime its futures run on.
struct Shared {
    store: Arc<AmazonS3>,
    handle: tokio::runtime::Handle,
    /// Taken on drop and shut down without waiting: a runtime may not be
    /// dropped, waiting, from inside another runtime.
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

impl Shared {
    /// Runs `fut` on the bucket's runtime and waits for its answer.
    fn run<T: Send + 'static>(&self, fut: impl Future<Output = io::Result<T>> + Send + 'static) -> io::Result<T> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle.spawn(async move {
            let _ = tx.send(fut.await);
        });
        rx.recv().map_err(|_| io::Error::other("the S3 blob store stopped before it answered"))?
    }
}

/// An `object_store` error as an I/O error of the matching kind.
fn io_error(e: object_store::Error) -> io::Error {
    let kind = match &e {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
            io::ErrorKind::AlreadyExists
        }
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e.to_string())
}

fn exists_error(key: &Key) -> io::Error {
    io::Error::new(io::ErrorKind::AlreadyExists, format!("blob {key} exists"))
}

/// One bucket and key prefix, reached with the AWS environment's settings.
#[derive(Clone)]
pub struct S3Bucket {
    shared: Arc<Shared>,
    prefix: Key,
    name: String,
}

impl std::fmt::Debug for S3Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S3Bucket(s3://{}/{})", self.name, self.prefix)
    }
}

impl S3Bucket {
    /// `bucket` with its keys under `prefix` (`""` for none; segments joined
    /// by `/`), configured by the AWS environment variables (module docs).
    /// Nothing is sent yet: [`S3Bucket::check`] tries the connection.
    pub fn from_env(bucket: &str, prefix: &str) -> io::Result<S3Bucket> {
        S3Bucket::build(AmazonS3Builder::from_env(), bucket, prefix)
    }

    /// As [`S3Bucket::from_env`], but configured by `settings` alone, named
    /// as the environment variables are (`AWS_ENDPOINT_URL`, `AWS_REGION`,
    /// ...): the environment is not read. An unknown name is an error.
    pub fn with_settings<'a>(
        bucket: &str,
        prefix: &str,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> io::Result<S3Bucket> {
        let mut builder = AmazonS3Builder::new();
        for (name, value) in settings {
            let key = name.to_ascii_lowercase().parse().map_err(|e: object_store::Error| {
                io::Error::new(io::ErrorKind::InvalidInput, format!("S3 setting {name}: {e}"))
            })?;
            builder = builder.with_config(key, value);
        }
        S3Bucket::build(builder, bucket, prefix)
    }

    fn build(builder: AmazonS3Builder, bucket: &str, prefix: &str) -> io::Result<S3Bucket> {
        let bad = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
        let prefix = Key::parse(prefix.trim_matches('/')).map_err(|e| bad(format!("key prefix {prefix:?}: {e}")))?;
        let store = builder
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| bad(format!("S3 settings for bucket {bucket:?}: {e}")))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("meshcheck-s3")
            .enable_all()
            .build()?;
        let shared = Shared { store: Arc::new(store), handle: runtime.handle().clone(), runtime: Some(runtime) };
        Ok(S3Bucket { shared: Arc::new(shared), prefix, name: bucket.to_string() })
    }

    /// Lists the prefix (one request): fails when the bucket cannot be
    /// reached or read with these settings.
    pub fn check(&self) -> io::Result<()> {
        let store = self.shared.store.clone();
        let prefix = self.prefix.clone();
        self.shared.run(async move {
            let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
            store.list_with_delimiter(prefix.as_ref()).await.map(drop).map_err(io_error)
        })
    }

    /// The blobs under `PREFIX/folder/`.
    pub fn blobs(&self, folder: &str) -> S3Blobs {
        S3Blobs { shared: self.shared.clone(), dir: self.prefix.clone().join(folder) }
    }
}

/// Blobs as objects `PREFIX/FOLDER/ID` in a bucket (see [`S3Bucket`]).
#[derive(Clone)]
pub struct S3Blobs {
    shared: Arc<Shared>,
    dir: Key,
}

impl std::fmt::Debug for S3Blobs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "S3Blobs({})", self.dir)
    }
}

impl S3Blobs {
    fn key(&self, id: &str) -> io::Result<Key> {
        check_blob_id(id)?;
        Ok(self.dir.clone().join(id))
    }

    /// The ids under the folder (not deeper), with their modification time.
    fn list(&self) -> io::Result<Vec<(String, i64)>> {
        let store = self.shared.store.clone();
        let dir = self.dir.clone();
        let mut out = self.shared.run(async move {
            let base = format!("{dir}/");
            let mut listing = store.list(Some(&dir));
            let mut out = Vec::new();
            while let Some(meta) = listing.next().await {
                let meta = meta.map_err(io_error)?;
                if let Some(id) = meta.location.as_ref().strip_prefix(&base).filter(|id| is_blob_id(id)) {
                    out.push((id.to_string(), meta.last_modified.timestamp()));
                }
            }
            Ok(out)
        })?;
        out.sort();
        Ok(out)
    }
}

impl Blobs for S3Blobs {
    fn writer(&self, id: &str) -> io::Result<Box<dyn BlobWriter>> {
        let key = self.key(id)?;
        Ok(Box::new(S3Writer { shared: self.shared.clone(), key, buf: Vec::new(), upload: None }))
    }
    fn read(&self, id: &str) -> io::Result<Vec<u8>> {
        let key = self.key(id)?;
        let store = self.shared.store.clone();
        self.shared.run(async move {
            let got = store.get(&key).await.map_err(io_error)?;
            Ok(got.bytes().await.map_err(io_error)?.to_vec())
        })
    }
    fn delete(&self, id: &str) -> io::Result<()> {
        let key = self.key(id)?;
        let store = self.shared.store.clone();
        self.shared.run(async move {
            match store.delete(&key).await {
                Err(object_store::Error::NotFound { .. }) => Ok(()),
                other => other.map_err(io_error),
            }
        })
    }
    fn ids(&self) -> io::Result<Vec<String>> {
        Ok(self.list()?.into_iter().map(|(id, _)| id).collect())
    }
    fn ids_older_than(&self, unix_secs: i64) -> io::Result<Vec<String>> {
        Ok(self.list()?.into_iter().filter(|&(_, t)| t < unix_secs).map(|(id, _)| id).collect())
    }
}

/// Aborts `upload` once none of its parts is still being sent. A part
/// request that reaches the server after the abort may still be stored
/// (S3's documentation says such part uploads may succeed, and the upload
/// then has to be aborted again): under load, the blob-store conformance
/// test's abandoned 20 MB writer, whose in-flight parts were cancelled by
/// the abort rather than finished, left an upload behind past its 10 s.
async fn abort_settled(mut upload: WriteMultipart) -> object_store::Result<()> {
    // Each error ends the wait at one failed part; the rest are waited for.
    while upload.wait_for_capacity(0).await.is_err() {}
    upload.abort().await
}

/// An [`S3Blobs`] writer: gathers a part in the caller's thread, then hands
/// it to a multipart upload on the bucket's runtime (module docs).
struct S3Writer {
    shared: Arc<Shared>,
    key: Key,
    /// Bytes not yet handed over (less than [`PART`]).
    buf: Vec<u8>,
    /// The multipart upload, once the blob has passed one part.
    upload: Option<WriteMultipart>,
}

impl S3Writer {
    /// Hands the gathered bytes to the multipart upload (starting it first),
    /// waiting while [`IN_FLIGHT`] parts are still being sent.
    fn send_part(&mut self) -> io::Result<()> {
        // More is likely to follow: gather the next part without regrowing.
        let part = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(PART)));
        let upload = self.upload.take();
        let store = self.shared.store.clone();
        let key = self.key.clone();
        let upload = self.shared.run(async move {
            let mut upload = match upload {
                Some(u) => u,
                None => WriteMultipart::new_with_chunk_size(store.put_multipart(&key).await.map_err(io_error)?, PART),
            };
            if let Err(e) = upload.wait_for_capacity(IN_FLIGHT).await {
                let _ = abort_settled(upload).await;
                return Err(io_error(e));
            }
            upload.put(part);
            Ok(upload)
        })?;
        self.upload = Some(upload);
        Ok(())
    }
}

impl BlobWriter for S3Writer {
    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let take = bytes.len().min(PART - self.buf.len());
            self.buf.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.buf.len() == PART {
                self.send_part()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> io::Result<()> {
        let store = self.shared.store.clone();
        let key = self.key.clone();
        let rest = Bytes::from(std::mem::take(&mut self.buf));
        match self.upload.take() {
            None => self.shared.run(async move {
                let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
                match store.put_opts(&key, PutPayload::from(rest), opts).await {
                    Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {
                        Err(exists_error(&key))
                    }
                    other => other.map(drop).map_err(io_error),
                }
            }),
            Some(mut upload) => self.shared.run(async move {
                upload.put(rest);
                let taken = match store.head(&key).await {
                    Ok(_) => Err(exists_error(&key)),
                    Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(io_error(e)),
                };
                if let Err(e) = taken {
                    let _ = abort_settled(upload).await;
                    return Err(e);
                }
                upload.finish().await.map(drop).map_err(io_error)
            }),
        }
    }
}

impl Drop for S3Writer {
    fn drop(&mut self) {
        // Unfinished: abort the multipart upload without waiting (a drop
        // must not block, and nothing of it is visible meanwhile).
        if let Some(upload) = self.upload.take() {
            self.shared.handle.spawn(async move {
                if let Err(e) = abort_settled(upload).await {
                    tracing::warn!(error = %e, "could not abort an unfinished multipart upload");
                }
            });
        }
    }
}
