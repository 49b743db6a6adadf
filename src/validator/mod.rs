//! The bridge to the Khronos glTF-Validator (SPEC-001).
//!
//! The validator is the npm package `gltf-validator`, pinned in the repo's
//! package.json and run by Node.js. A small driver (`driver.js`, embedded
//! with `include_str!`) runs in a long-lived `node` process and speaks
//! length-prefixed frames over stdin/stdout: meshcheck sends the main file's
//! bytes, the validator asks for external resources by URI and meshcheck
//! answers from the same resolver the loader uses (the zip bundle in memory,
//! or the folder beside a .gltf), so no temporary files are written and no
//! local paths appear in messages.
//!
//! A [`Validator`] is a pool of such processes: the CLI uses one per run
//! (as many processes as files validated at once), the service keeps it warm.
//! A validation that exceeds the timeout kills its process (a new one starts
//! on the next call); so does a crash.

use crate::asset::bundle::{Resolver, UriKind, classify_uri, normalise};
use crate::error::{Error, ErrorCode, Result};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// What SPEC-001 got from the validator: its outcome, or why it did not run.
pub type SpecRun = std::result::Result<Findings, Failure>;

/// The driver, embedded in the binary.
pub const DRIVER_JS: &str = include_str!("driver.js");
/// The version package.json pins.
pub const PINNED_VERSION: &str = "2.0.0-dev.3.10";
/// Default per-file timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Largest frame accepted from the driver.
const MAX_FRAME: u32 = 256 << 20;

/// The command that installs the validator, for error messages.
pub const FIX_COMMAND: &str = "npm ci   (in the meshcheck folder; or: npm install gltf-validator@2.0.0-dev.3.10)";

/// The validator's folded report for one file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    /// Version string the validator reports.
    pub validator_version: String,
    /// Total errors.
    pub errors: u64,
    /// Total warnings.
    pub warnings: u64,
    /// Total infos.
    pub infos: u64,
    /// Total hints.
    pub hints: u64,
    /// Whether errors/warnings were cut at the cap.
    pub truncated: bool,
    /// Errors and warnings verbatim (code, message, severity, pointer or offset), capped.
    pub messages: Vec<Map<String, Value>>,
    /// Count of messages per code (every severity).
    pub by_code: Map<String, Value>,
    /// Extensions used by the document whose data this validator does not check.
    pub not_covered: Vec<String>,
}

/// Why a validation produced no outcome.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The per-file timeout passed; the process was killed.
    TimedOut,
    /// The process died or spoke nonsense; it was discarded.
    Crashed(String),
    /// The validator refused the input (e.g. a format it cannot detect).
    Rejected(String),
}

impl Failure {
    /// The reason SPEC-001 reports when skipped.
    pub fn reason(&self) -> String {
        match self {
            Failure::TimedOut => "validator timed out".into(),
            Failure::Crashed(why) => format!("validator crashed: {why}"),
            Failure::Rejected(why) => format!("validator could not read the input: {why}"),
        }
    }
}

/// Where the validator and Node are.
#[derive(Debug, Clone, PartialEq)]
pub struct Install {
    /// The `node` executable.
    pub node: PathBuf,
    /// The `gltf-validator` package folder.
    pub package: PathBuf,
}

fn not_found(what: &str) -> Error {
    Error::new(ErrorCode::Internal, format!("SPEC-001 needs the Khronos glTF-Validator, but {what}")).with_help(
        format!("run: {FIX_COMMAND}; or set MESHCHECK_GLTF_VALIDATOR to the package folder; or pass --skip SPEC-001"),
    )
}

/// Finds Node and the package: `MESHCHECK_GLTF_VALIDATOR` (the package
/// folder), then `node_modules/gltf-validator` in the current directory or
/// beside the executable (and up to three folders above it, which covers
/// `target/release`), then `../share/meshcheck/node_modules` beside the executable.
pub fn locate() -> Result<Install> {
    let node = match std::env::var_os("MESHCHECK_NODE") {
        Some(p) => PathBuf::from(p),
        None => find_on_path("node").ok_or_else(|| {
            Error::new(ErrorCode::Internal, "SPEC-001 needs Node.js to run the Khronos glTF-Validator, and `node` is not on PATH")
                .with_help("install Node.js 18 or newer (Debian: apt-get install nodejs), then run: npm ci; or pass --skip SPEC-001")
        })?,
    };
    let is_pkg = |p: &Path| p.join("package.json").is_file() && p.join("index.js").is_file();
    if let Some(p) = std::env::var_os("MESHCHECK_GLTF_VALIDATOR") {
        let p = PathBuf::from(p);
        return if is_pkg(&p) {
            Ok(Install { node, package: p })
        } else {
            Err(not_found(&format!(
                "MESHCHECK_GLTF_VALIDATOR={} is not the gltf-validator package folder",
                p.display()
            )))
        };
    }
    let mut candidates = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        candidates.push(cwd.join("node_modules/gltf-validator"));
    }
    if let Some(dir) = std::env::current_exe().ok().and_then(|e| e.parent().map(Path::to_path_buf)) {
        for up in dir.ancestors().take(4) {
            candidates.push(up.join("node_modules/gltf-validator"));
        }
        candidates.push(dir.join("../share/meshcheck/node_modules/gltf-validator"));
    }
    candidates
        .into_iter()
        .find(|c| is_pkg(c))
        .map(|package| Install { node, package })
        .ok_or_else(|| not_found("the npm package gltf-validator was not found (node_modules/gltf-validator)"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Asks Linux for 1 MiB pipe buffers (the default is 64 KiB): assets and
/// their textures cross these pipes in megabytes, and every refill of a
/// small buffer costs a context switch on each side.
#[cfg(target_os = "linux")]
fn widen_pipe(fd: &impl std::os::fd::AsRawFd) {
    // SAFETY: F_SETPIPE_SZ on a pipe we own; failure (e.g. over
    // /proc/sys/fs/pipe-max-size) leaves the default size, which still works.
    unsafe {
        libc::fcntl(fd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20);
    }
}

#[cfg(not(target_os = "linux"))]
fn widen_pipe<T>(_fd: &T) {}

/// A frame: JSON header plus binary payload.
type Frame = (Value, Vec<u8>);

fn write_frame(w: &mut impl Write, header: &Value, payload: &[u8]) -> std::io::Result<()> {
    let json = serde_json::to_vec(header)?;
    let total = 4 + json.len() + payload.len();
    let total = u32::try_from(total).map_err(|_| std::io::Error::other("frame over 4 GiB"))?;
    w.write_all(&total.to_le_bytes())?;
    w.write_all(&(json.len() as u32).to_le_bytes())?;
    w.write_all(&json)?;
    w.write_all(payload)?;
    w.flush()
}

fn read_frame(r: &mut impl Read) -> std::io::Result<Frame> {
    let mut word = [0u8; 4];
    r.read_exact(&mut word)?;
    let total = u32::from_le_bytes(word);
    if !(4..=MAX_FRAME).contains(&total) {
        return Err(std::io::Error::other(format!("bad frame length {total}")));
    }
    r.read_exact(&mut word)?;
    let jlen = u32::from_le_bytes(word);
    if jlen > total - 4 {
        return Err(std::io::Error::other("bad header length"));
    }
    let mut json = vec![0u8; jlen as usize];
    r.read_exact(&mut json)?;
    let mut payload = vec![0u8; (total - 4 - jlen) as usize];
    r.read_exact(&mut payload)?;
    Ok((serde_json::from_slice(&json)?, payload))
}

/// One running driver process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    frames: Receiver<std::io::Result<Frame>>,
    next_id: u64,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Process {
    fn spawn(install: &Install, startup: Duration) -> Result<(Process, String, Vec<String>)> {
        let mut child = Command::new(&install.node)
            .arg("-e")
            .arg(DRIVER_JS)
            .env("MESHCHECK_VALIDATOR_PKG", &install.package)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| not_found(&format!("`{}` could not be started: {e}", install.node.display())))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        widen_pipe(&stdin);
        widen_pipe(&stdout);
        let (tx, rx) = channel();
        std::thread::Builder::new()
            .name("gltf-validator-reader".into())
            .spawn(move || {
                let mut r = BufReader::with_capacity(1 << 16, stdout);
                loop {
                    let f = read_frame(&mut r);
                    let stop = f.is_err();
                    if tx.send(f).is_err() || stop {
                        return;
                    }
                }
            })
            .map_err(|e| Error::new(ErrorCode::Internal, format!("cannot start a reader thread: {e}")))?;
        let p = Process { child, stdin, frames: rx, next_id: 0 };
        let ready = match p.frames.recv_timeout(startup) {
            Ok(Ok((h, _))) if h["type"] == "ready" => h,
            Ok(Ok((h, _))) => return Err(not_found(&format!("its driver said {h} instead of ready"))),
            Ok(Err(e)) => {
                return Err(not_found(&format!("the Node process exited at start ({e}); is the package intact?")));
            }
            Err(_) => return Err(not_found("the Node process did not start in time")),
        };
        let version = ready["version"].as_str().unwrap_or("unknown").to_string();
        let supported = ready["supported"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default();
        Ok((p, version, supported))
    }

    /// Validates one file; `Err` means the process must be discarded.
    fn validate(
        &mut self,
        uri: &str,
        bytes: &[u8],
        resolver: &dyn Resolver,
        timeout: Duration,
    ) -> std::result::Result<Findings, Failure> {
        let id = self.next_id;
        self.next_id += 1;
        let deadline = Instant::now() + timeout;
        let crashed = |e: std::io::Error| Failure::Crashed(e.to_string());
        write_frame(&mut self.stdin, &json!({"type": "validate", "id": id, "uri": uri}), bytes).map_err(crashed)?;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (header, _) = match self.frames.recv_timeout(left) {
                Ok(Ok(f)) => f,
                Ok(Err(e)) => return Err(Failure::Crashed(e.to_string())),
                Err(RecvTimeoutError::Timeout) => return Err(Failure::TimedOut),
                Err(RecvTimeoutError::Disconnected) => return Err(Failure::Crashed("the process exited".into())),
            };
            if header["id"].as_u64() != Some(id) {
                continue; // A late frame from a validation that was abandoned.
            }
            match header["type"].as_str() {
                Some("resource") => {
                    let uri = header["uri"].as_str().unwrap_or_default();
                    let req = header["req"].clone();
                    let reply = match classify_uri(uri) {
                        UriKind::Relative(p) => match normalise(&p).map(|n| resolver.fetch(&n)) {
                            Some(Ok(bytes)) => Ok(bytes),
                            Some(Err(e)) => Err(format!("Could not load '{uri}': {}", e.reason())),
                            None => Err(format!("Could not load '{uri}': the path leaves the asset's folder")),
                        },
                        UriKind::Unfetchable(e) => Err(format!("Could not load '{uri}': {}", e.reason())),
                        UriKind::Data => Err("data: URIs are read by the validator itself".into()),
                    };
                    let sent = match reply {
                        Ok(b) => {
                            write_frame(&mut self.stdin, &json!({"type": "resource", "req": req, "found": true}), &b)
                        }
                        Err(reason) => write_frame(
                            &mut self.stdin,
                            &json!({"type": "resource", "req": req, "found": false, "reason": reason}),
                            &[],
                        ),
                    };
                    sent.map_err(crashed)?;
                }
                Some("result") => {
                    return serde_json::from_value(header)
                        .map_err(|e| Failure::Crashed(format!("unreadable result: {e}")));
                }
                Some("error") => {
                    return Err(Failure::Rejected(header["message"].as_str().unwrap_or_default().to_string()));
                }
                _ => return Err(Failure::Crashed(format!("unexpected frame {header}"))),
            }
        }
    }
}

/// A pool of warm validator processes.
pub struct Validator {
    install: Install,
    idle: Mutex<Vec<Process>>,
    /// Per-file timeout.
    pub timeout: Duration,
    /// The validator's version (from the first process started).
    pub version: String,
    /// Extensions the validator checks.
    pub supported: Vec<String>,
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").field("install", &self.install).field("version", &self.version).finish()
    }
}

impl Validator {
    /// Locates the validator and starts one process (so that a missing or
    /// broken install is reported before any file is read).
    pub fn start(timeout: Duration) -> Result<Validator> {
        let install = locate()?;
        Validator::with_install(install, timeout)
    }

    /// Starts a pool for a given install.
    pub fn with_install(install: Install, timeout: Duration) -> Result<Validator> {
        let (p, version, supported) = Process::spawn(&install, Duration::from_secs(30))?;
        Ok(Validator { install, idle: Mutex::new(vec![p]), timeout, version, supported })
    }

    /// The process-wide default pool, started on first use.
    pub fn global() -> Result<Arc<Validator>> {
        static GLOBAL: OnceLock<std::result::Result<Arc<Validator>, Error>> = OnceLock::new();
        GLOBAL
            .get_or_init(|| {
                let timeout = std::env::var("MESHCHECK_VALIDATOR_TIMEOUT")
                    .ok()
                    .and_then(|s| s.parse::<f64>().ok())
                    .filter(|s| *s > 0.0)
                    .map(Duration::from_secs_f64)
                    .unwrap_or(DEFAULT_TIMEOUT);
                Validator::start(timeout).map(Arc::new)
            })
            .clone()
    }

    /// Validates one file's main bytes, serving external resources from `resolver`.
    /// `uri` is the name shown in messages (a file name, never a local path).
    pub fn validate(&self, uri: &str, bytes: &[u8], resolver: &dyn Resolver) -> std::result::Result<Findings, Failure> {
        let taken = self.idle.lock().map(|mut v| v.pop()).unwrap_or(None);
        let mut process = match taken {
            Some(p) => p,
            None => Process::spawn(&self.install, Duration::from_secs(30))
                .map(|(p, _, _)| p)
                .map_err(|e| Failure::Crashed(e.message))?,
        };
        let result = process.validate(uri, bytes, resolver, self.timeout);
        match &result {
            // A healthy process goes back to the pool; a timed-out or crashed one is dropped (killed).
            Ok(_) | Err(Failure::Rejected(_)) => {
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push(process);
                }
            }
            Err(_) => drop(process),
        }
        result
    }

    /// Name and version for the report's `validator` field.
    pub fn info(&self) -> crate::report::EngineInfo {
        crate::report::EngineInfo { name: "Khronos glTF-Validator".into(), version: self.version.clone() }
    }
}
