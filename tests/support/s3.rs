//! A real S3-protocol server for the tests: the `s3s-fs` binary (0.14.1,
//! the last release our rustc builds) serving a temporary folder on a free
//! loopback port, with fixed test credentials and one bucket ([`start`]).
//!
//! The binary is `MESHCHECK_S3S_FS` when set, else
//! `target/tools/bin/s3s-fs` in the repository, installed there on first use
//! with `cargo install --locked --root target/tools s3s-fs@0.14.1 --features
//! binary` (once per test process, behind a mutex; .ci/run installs it before
//! the tests). The handle ([`S3Server`]) gives the endpoint, the bucket, the
//! environment a client needs, and the server's data folder (to see what the
//! protocol hides, such as unfinished multipart uploads); dropping it kills
//! the server.

use object_store::ObjectStore as _;
use object_store::signer::Signer as _;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The access key the server accepts.
pub const ACCESS_KEY: &str = "meshcheck-test-key";
/// Its secret.
pub const SECRET_KEY: &str = "meshcheck-test-secret";
/// The region clients sign for (the server takes any).
pub const REGION: &str = "us-east-1";
/// The `s3s-fs` release the tests run.
pub const VERSION: &str = "0.14.1";

/// The binary's path once found or installed (or why not), per process.
static BINARY: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The `s3s-fs` binary: `MESHCHECK_S3S_FS`, else `target/tools/bin/s3s-fs`,
/// installed with cargo when missing.
pub fn binary() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("MESHCHECK_S3S_FS") {
        let p = PathBuf::from(p);
        return if p.is_file() { Ok(p) } else { Err(format!("MESHCHECK_S3S_FS={} is not a file", p.display())) };
    }
    let mut found = BINARY.lock().unwrap_or_else(|e| e.into_inner());
    if found.is_none() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tools");
        let bin = root.join("bin/s3s-fs");
        *found = Some(if bin.is_file() { Ok(bin) } else { install(&root).map(|()| bin) });
    }
    found.clone().expect("set above")
}

fn install(root: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let spec = format!("s3s-fs@{VERSION}");
    eprintln!(
        "s3s-fs is not at {}/bin: installing it with `cargo install --locked --root {} {spec} --features binary` \
         (a few minutes, once)",
        root.display(),
        root.display()
    );
    let started = Instant::now();
    let status = Command::new(cargo)
        .args(["install", "--locked", "--root"])
        .arg(root)
        .args([spec.as_str(), "--features", "binary"])
        // Its own build folder, not the one running these tests.
        .env_remove("CARGO_TARGET_DIR")
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run cargo install: {e}"))?;
    if !status.success() {
        return Err(format!("cargo install {spec} failed: {status}"));
    }
    eprintln!("installed s3s-fs {VERSION} in {} s", started.elapsed().as_secs());
    Ok(())
}

/// A running `s3s-fs` with one bucket.
#[derive(Debug)]
pub struct S3Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// The bucket made at start.
    pub bucket: String,
    /// The server's data folder: a folder per bucket, an object at
    /// `BUCKET/KEY`, an unfinished multipart upload as `.upload*` files.
    data: tempfile::TempDir,
    _logs: tempfile::TempDir,
}

impl S3Server {
    /// The settings a client needs, as AWS environment variables.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", REGION.into()),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.into()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.into()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// The server's data folder (see [`S3Server`]).
    pub fn data_dir(&self) -> &Path {
        self.data.path()
    }

    /// The objects under `prefix/` in the bucket, as paths relative to it,
    /// sorted, read from the server's folder.
    pub fn objects(&self, prefix: &str) -> Vec<String> {
        let base = self.data.path().join(&self.bucket);
        let mut out = Vec::new();
        let mut stack = vec![base.join(prefix)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if !entry.file_name().to_string_lossy().starts_with('.') {
                    out.push(path.strip_prefix(&base).unwrap().to_string_lossy().into_owned());
                }
            }
        }
        out.sort();
        out
    }

    /// The unfinished multipart uploads the server holds (its `.upload-*` files).
    pub fn open_multipart_uploads(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.data.path()) else { return Vec::new() };
        let mut out: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".upload"))
            .collect();
        out.sort();
        out
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `s3s-fs` over a new temporary folder on a free loopback port,
/// waits until it answers, and creates bucket `meshcheck-test`.
pub fn start() -> Result<S3Server, String> {
    let bin = binary()?;
    let mut last = String::new();
    // A port found free can be taken before the server binds it: try again.
    for _ in 0..3 {
        let data = tempfile::tempdir().map_err(|e| e.to_string())?;
        let logs = tempfile::tempdir().map_err(|e| e.to_string())?;
        let port =
            std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_err(|e| e.to_string())?.port();
        let log = std::fs::File::create(logs.path().join("s3s-fs.log")).map_err(|e| e.to_string())?;
        let child = Command::new(&bin)
            .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--access-key", ACCESS_KEY, "--secret-key"])
            .arg(SECRET_KEY)
            .arg(data.path())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| e.to_string())?)
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let mut server = S3Server {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            bucket: "meshcheck-test".into(),
            data,
            _logs: logs,
        };
        match wait_and_make_bucket(&mut server, port) {
            Ok(()) => return Ok(server),
            Err(e) => {
                let log = std::fs::read_to_string(server._logs.path().join("s3s-fs.log")).unwrap_or_default();
                last = format!("{e}; its log: {log}");
            }
        }
    }
    Err(format!("s3s-fs did not start: {last}"))
}

fn wait_and_make_bucket(server: &mut S3Server, port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("s3s-fs exited: {status}"));
        }
        if Instant::now() > deadline {
            return Err("s3s-fs did not answer within 20 s".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // CreateBucket is a signed PUT on /BUCKET/: object_store signs the URL
    // and a plain client sends it. On a thread of its own, so a caller on a
    // runtime thread can use this too.
    let env = server.env();
    let bucket = server.bucket.clone();
    std::thread::spawn(move || -> Result<(), String> {
        let mut builder = object_store::aws::AmazonS3Builder::new().with_bucket_name(&bucket);
        for (k, v) in &env {
            builder = builder.with_config(k.to_ascii_lowercase().parse().map_err(|e| format!("{k}: {e}"))?, v);
        }
        let s3 = builder.build().map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let root = object_store::path::Path::from("");
        let url = rt
            .block_on(s3.signed_url(reqwest::Method::PUT, &root, Duration::from_secs(60)))
            .map_err(|e| format!("signing CreateBucket: {e}"))?;
        let resp = reqwest::blocking::Client::new().put(url).send().map_err(|e| format!("CreateBucket: {e}"))?;
        if !resp.status().is_success() {
            return Err(format!("CreateBucket: {} {}", resp.status(), resp.text().unwrap_or_default()));
        }
        // The bucket answers a signed listing.
        rt.block_on(s3.list_with_delimiter(None)).map_err(|e| format!("listing the new bucket: {e}"))?;
        Ok(())
    })
    .join()
    .map_err(|_| "the bucket thread panicked".to_string())?
}
