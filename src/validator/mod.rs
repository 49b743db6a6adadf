//! The bridge to the Khronos glTF-Validator (SPEC-001).
//!
//! The validator is the npm package `gltf-validator`, pinned in the repo's
//! package.json and run by Node.js. A small driver (`driver.js`, embedded
//! with `include_str!`) runs in a long-lived `node` process and speaks
//! length-prefixed frames over stdin/stdout: meshcheck sends the main file's
//! bytes (or, for a plain file on disk, its path, which Node reads itself),
//! the validator asks for external resources by URI and meshcheck answers
//! from the same resolver the loader uses (the zip bundle in memory, or the
//! folder beside a .gltf, whose files Node again reads by path), so no
//! temporary files are written and no local paths appear in messages. A path
//! Node cannot read as announced (gone, or another size) is answered with the
//! bytes meshcheck holds, so the findings never depend on the route.
//!
//! A [`Validator`] is a pool of such processes: the CLI uses one per run
//! (one process for every two files validated at once), the service keeps it
//! warm (a process for each validation in flight). A process takes several
//! validations at a time: the driver queues them and runs them in order, so
//! it goes from one file to the next without waiting for meshcheck to finish
//! the last one's report and read the next file.
//! Processes start without waiting: Node loads the validator while meshcheck
//! reads and opens the input, and the first request waits in the pipe until
//! the driver is ready; [`Validator::ready`] waits for the first process's
//! handshake and turns a broken install into the environment error. A
//! validation that exceeds the timeout (counted from the driver's `started`
//! for it) kills its process; so does a crash. The validations queued behind
//! it had not begun: they go to another process (a new one when needed).

use crate::asset::bundle::{Resolver, UriKind, classify_uri, normalise};
use crate::error::{Error, ErrorCode, Result};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, SyncSender, channel, sync_channel};
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
/// Options each driver's Node starts with. `--single-threaded-gc`: V8
/// collects garbage on the thread that made it, instead of also on helper
/// threads that compete with meshcheck's own checks for the cores. Over a
/// folder of 1,000 small files Node's CPU went down by about 0.1 s and the
/// run's wall time by 3-5 % (two sittings); on the 1.3M-triangle s13 by
/// about 5 % (BENCHMARKS.md, "Sixteenth step"). The findings are the validator's
/// either way: the option changes when memory is collected, not what the
/// validator computes.
pub const NODE_FLAGS: &[&str] = &["--single-threaded-gc"];
/// V8 options the driver sets as it starts (`v8.setFlagsFromString`, before
/// it loads the validator), rather than on Node's command line, where a
/// Node whose V8 no longer knew one would refuse to start and SPEC-001
/// would fail on every file; at run time V8 only prints an error (to the
/// driver's stderr, which meshcheck discards) and runs on without it. They
/// reach the driver in `MESHCHECK_V8_FLAGS`, and the ready frame lists them
/// ([`Hello::v8_flags`]).
///
/// `--interrupt-budget=270336` (four times V8's default): a function is
/// compiled by the optimizing compiler (TurboFan) after four times as much
/// interpreted work. The validator is one large generated script; with the
/// default budget Node compiled 254 of its functions in a run over 1,000
/// small files, 833 ms of compiler time (`--trace-opt`), a third of
/// Node's CPU there; with four times the budget, 115 in 271 ms, the ones
/// that stay hot. Over those files the bare validator's CPU went from
/// 1.43-1.44 to 1.17-1.21 s, over the shared assets' folder from 0.98 to
/// 0.82 s; meshcheck's run over the small files from 1.34 to 1.175 s (CPU
/// 2.38 -> 2.07 s). On the large spheres (hot loops, compiled early either
/// way) nothing changed (BENCHMARKS.md, "Seventeenth step"). What V8
/// compiles changes, not what the script computes: the reports are the
/// same. Set at run time it has the same effect (the same 115 functions
/// compiled).
pub const V8_FLAGS: &[&str] = &["--interrupt-budget=270336"];
/// Largest frame accepted from the driver.
const MAX_FRAME: u32 = 256 << 20;
/// How long a Node process may take to load the validator and say it is ready.
const STARTUP: Duration = Duration::from_secs(30);

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

/// What a driver says when it is ready: the validator's version and the
/// extensions it checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Hello {
    /// Version string the validator reports.
    pub version: String,
    /// Extensions the validator checks.
    pub supported: Vec<String>,
    /// The Node options the process runs with (`process.execArgv`):
    /// [`NODE_FLAGS`], unless Node dropped one.
    pub node_flags: Vec<String>,
    /// The V8 options the driver set as it started ([`V8_FLAGS`]; one its
    /// V8 does not know is listed too, and ignored).
    pub v8_flags: Vec<String>,
}

impl Hello {
    fn of(header: &Value) -> Hello {
        Hello {
            version: header["version"].as_str().unwrap_or("unknown").to_string(),
            supported: strings(&header["supported"]),
            node_flags: strings(&header["flags"]),
            v8_flags: strings(&header["v8_flags"]),
        }
    }
}

/// The strings of a JSON array (none when it is not one).
fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default()
}

/// The main file as the validator gets it: its bytes, and where they were
/// read from when they are a plain file on disk (Node then reads the file
/// itself and the bytes cross the pipe only if that read fails).
#[derive(Debug, Clone, Copy)]
pub struct Main<'a> {
    /// The bytes meshcheck read, or, when it no longer holds them, their
    /// length (the file at `path` is then read again if Node cannot read it).
    pub bytes: MainBytes<'a>,
    /// The plain file they were read from, if any.
    pub path: Option<&'a Path>,
}

/// The main file's bytes as [`Main`] holds them.
#[derive(Debug, Clone, Copy)]
pub enum MainBytes<'a> {
    /// In memory.
    Held(&'a [u8]),
    /// Not held: this many bytes at [`Main::path`], a file that does not
    /// change while it is validated (a stored blob). Should Node fail to
    /// read it, meshcheck reads it again, and fails the validation if it is
    /// gone or no longer this size.
    OnDisk(u64),
}

impl Main<'_> {
    fn size(&self) -> u64 {
        match self.bytes {
            MainBytes::Held(b) => b.len() as u64,
            MainBytes::OnDisk(size) => size,
        }
    }

    /// The bytes to send through the pipe.
    fn read(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        match (self.bytes, self.path) {
            (MainBytes::Held(b), _) => Ok(std::borrow::Cow::Borrowed(b)),
            (MainBytes::OnDisk(size), Some(path)) => {
                let bytes = std::fs::read(path)?;
                if bytes.len() as u64 != size {
                    return Err(std::io::Error::other(format!(
                        "the input's file is now {} bytes, not {size}",
                        bytes.len()
                    )));
                }
                Ok(std::borrow::Cow::Owned(bytes))
            }
            (MainBytes::OnDisk(_), None) => {
                Err(std::io::Error::other("the input's bytes are neither held nor on disk"))
            }
        }
    }
}

/// The input's file could not be read again for Node.
fn unreadable(e: std::io::Error) -> Failure {
    Failure::Rejected(format!("the stored file could not be read again: {e}"))
}

/// A path as the driver gets it: absolute (Node's working directory is
/// meshcheck's, but an absolute path needs no such agreement) and UTF-8
/// (JSON carries no other); `None` sends the bytes instead.
fn wire_path(path: &Path) -> Option<String> {
    std::path::absolute(path).ok()?.to_str().map(String::from)
}

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

/// Where a process's frames go: the validation each belongs to (by id), and
/// why the process ended once its reader has stopped.
#[derive(Default)]
struct Routes {
    to: HashMap<u64, Sender<Frame>>,
    ended: Option<String>,
}

/// One running driver process, shared by the validations in flight on it.
///
/// The driver takes validations one at a time, in the order sent, and says
/// `started` as it begins each; requests sent while it works wait in its
/// queue, so it goes from one file to the next without waiting for
/// meshcheck. A reader thread hands every frame to the validation whose id
/// it carries; writes to stdin take the lock one frame at a time.
struct Process {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    /// Validations sent and not yet answered.
    in_flight: AtomicUsize,
    /// Killed (a validation timed out) or ended: it takes no more work.
    broken: Arc<AtomicBool>,
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The command that starts a driver: Node with [`NODE_FLAGS`] running
/// [`DRIVER_JS`] on `install`'s package, the driver to set `v8_flags`
/// ([`V8_FLAGS`] for every process meshcheck starts; tests pass others).
pub fn driver_command(install: &Install, v8_flags: &[&str]) -> Command {
    let mut command = Command::new(&install.node);
    command
        .args(NODE_FLAGS)
        .arg("-e")
        .arg(DRIVER_JS)
        .env("MESHCHECK_VALIDATOR_PKG", &install.package)
        .env("MESHCHECK_V8_FLAGS", v8_flags.join(" "));
    command
}

/// How one validation on a shared process ended.
enum Attempt {
    /// Its outcome.
    Done(std::result::Result<Findings, Failure>),
    /// The process ended before the driver began this validation (another
    /// one crashed it or timed out): innocent, it is tried again elsewhere.
    Again,
}

/// Takes a validation's route out of the map when it ends, however it ends.
struct Unroute<'a>(&'a Mutex<Routes>, u64);

impl Drop for Unroute<'_> {
    fn drop(&mut self) {
        if let Ok(mut r) = self.0.lock() {
            r.to.remove(&self.1);
        }
    }
}

impl Process {
    /// Starts a driver without waiting for it. Its first frame is the
    /// handshake, which also goes to `hello` when given (the pool's first
    /// process), or why there was none.
    fn spawn(install: &Install, hello: Option<SyncSender<std::result::Result<Hello, String>>>) -> Result<Process> {
        let mut child = driver_command(install, V8_FLAGS)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| not_found(&format!("`{}` could not be started: {e}", install.node.display())))?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        widen_pipe(&stdin);
        widen_pipe(&stdout);
        let routes = Arc::new(Mutex::new(Routes::default()));
        let broken = Arc::new(AtomicBool::new(false));
        let (their_routes, their_broken) = (routes.clone(), broken.clone());
        let reader = std::thread::Builder::new().name("gltf-validator-reader".into()).spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            let mut hello = hello;
            let why = loop {
                let f = read_frame(&mut r);
                if let Some(h) = hello.take() {
                    let _ = h.send(match &f {
                        Ok((header, _)) if header["type"] == "ready" => Ok(Hello::of(header)),
                        Ok((header, _)) => Err(format!("its driver said {header} instead of ready")),
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                            Err("the Node process exited at start; is the package intact?".into())
                        }
                        Err(e) => Err(format!("the Node process exited at start ({e}); is the package intact?")),
                    });
                }
                match f {
                    Ok((header, payload)) => {
                        let Some(id) = header["id"].as_u64() else { continue };
                        if let Ok(r) = their_routes.lock()
                            && let Some(to) = r.to.get(&id)
                        {
                            let _ = to.send((header, payload));
                        }
                        // Else a late frame of a validation that was abandoned.
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break "the process exited".to_string(),
                    Err(e) => break e.to_string(),
                }
            };
            their_broken.store(true, Ordering::SeqCst);
            if let Ok(mut r) = their_routes.lock() {
                r.ended = Some(why);
                r.to.clear(); // Every waiting validation sees the end.
            }
        });
        if let Err(e) = reader {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::new(ErrorCode::Internal, format!("cannot start a reader thread: {e}")));
        }
        Ok(Process {
            child: Mutex::new(child),
            stdin: Mutex::new(stdin),
            routes,
            next_id: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            broken,
        })
    }

    /// Stops the process (a validation on it timed out): the others on it
    /// see it end and go elsewhere.
    fn kill(&self) {
        self.broken.store(true, Ordering::SeqCst);
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
        }
    }

    fn send(&self, header: &Value, payload: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().map_err(|_| std::io::Error::other("a writer panicked"))?;
        write_frame(&mut *stdin, header, payload)
    }

    /// Validates one file on this process, behind the `ahead` validations
    /// already sent to it. The timeout runs from the driver's `started`;
    /// until then the wait is bounded by the startup time plus a timeout
    /// for each validation ahead (each of which is killed at its own).
    fn validate(&self, uri: &str, main: Main<'_>, resolver: &dyn Resolver, timeout: Duration, ahead: usize) -> Attempt {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = channel();
        {
            let Ok(mut r) = self.routes.lock() else { return Attempt::Again };
            if r.ended.is_some() {
                return Attempt::Again;
            }
            r.to.insert(id, tx);
        }
        let _unroute = Unroute(&self.routes, id);
        let by_path = main.path.and_then(wire_path);
        let mut frame = json!({"type": "validate", "id": id, "uri": uri});
        if let MainBytes::Held(bytes) = main.bytes {
            let known = answered_ahead(bytes, resolver);
            if !known.is_empty() {
                frame["resources"] = Value::Object(known);
            }
        }
        let sent = match &by_path {
            Some(path) => {
                frame["path"] = json!(path);
                frame["size"] = json!(main.size());
                self.send(&frame, &[])
            }
            None => match main.read() {
                Ok(bytes) => self.send(&frame, &bytes),
                Err(e) => return Attempt::Done(Err(unreadable(e))),
            },
        };
        if sent.is_err() {
            return Attempt::Again;
        }
        let waits = u32::try_from(ahead + 1).unwrap_or(u32::MAX);
        let mut deadline = Instant::now() + STARTUP + timeout.saturating_mul(waits);
        let mut started = false;
        let ended = |started: bool, why: String| {
            if started { Attempt::Done(Err(Failure::Crashed(why))) } else { Attempt::Again }
        };
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (header, _) = match rx.recv_timeout(left) {
                Ok(f) => f,
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    return Attempt::Done(Err(Failure::TimedOut));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let why = self.routes.lock().ok().and_then(|r| r.ended.clone());
                    return ended(started, why.unwrap_or_else(|| "the process exited".into()));
                }
            };
            let sent = match header["type"].as_str() {
                Some("started") => {
                    started = true;
                    deadline = Instant::now() + timeout;
                    Ok(())
                }
                // The file could not be read by path: the bytes meshcheck holds.
                Some("bytes") => match main.read() {
                    Ok(bytes) => self.send(&json!({"type": "bytes", "id": id}), &bytes),
                    Err(e) => {
                        // Node waits for bytes: an empty file ends its work on
                        // this one (its answer, to no route, is dropped).
                        if self.send(&json!({"type": "bytes", "id": id}), &[]).is_err() {
                            self.kill();
                        }
                        return Attempt::Done(Err(unreadable(e)));
                    }
                },
                Some("resource") => {
                    let uri = header["uri"].as_str().unwrap_or_default();
                    let req = header["req"].clone();
                    let local = header["local"].as_bool().unwrap_or(false);
                    match resource(uri, resolver, local) {
                        Reply::Path(path, size) => self.send(
                            &json!({"type": "resource", "req": req, "found": true, "path": path, "size": size}),
                            &[],
                        ),
                        Reply::Bytes(b) => self.send(&json!({"type": "resource", "req": req, "found": true}), &b),
                        Reply::Missing(reason) => {
                            self.send(&json!({"type": "resource", "req": req, "found": false, "reason": reason}), &[])
                        }
                    }
                }
                Some("result") => {
                    return Attempt::Done(
                        serde_json::from_value(header).map_err(|e| Failure::Crashed(format!("unreadable result: {e}"))),
                    );
                }
                Some("error") => {
                    return Attempt::Done(Err(Failure::Rejected(
                        header["message"].as_str().unwrap_or_default().to_string(),
                    )));
                }
                _ => {
                    self.kill();
                    return Attempt::Done(Err(Failure::Crashed(format!("unexpected frame {header}"))));
                }
            };
            if let Err(e) = sent {
                self.kill();
                return ended(started, e.to_string());
            }
        }
    }
}

/// The largest .gltf whose resources are answered ahead ([`answered_ahead`]);
/// a larger one (its buffers embedded as data: URIs, typically) asks as it goes.
const ANSWER_AHEAD_MAX: usize = 4 << 20;

/// The URIs a .gltf names for its buffers and images.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Named {
    buffers: Vec<Uri>,
    images: Vec<Uri>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Uri {
    uri: Option<String>,
}

/// Answers, sent with the validate frame, for the files a .gltf names that
/// are plain files in its folder (their path and size) or that the
/// resolver refuses (the reason): uri -> `{path, size}` or `{reason}`, the
/// answers [`resource`] gives. The driver uses one when the validator asks
/// for that exact URI instead of asking meshcheck and waiting for a thread
/// that may be busy, so Node does not idle between a folder's files; a URI
/// the validator spells otherwise (it normalises `./a/../b.bin` and
/// escapes spaces), a resource only held in memory (a zip member) and a
/// GLB still ask as before. Empty for anything but a small JSON document
/// read from a folder.
fn answered_ahead(main: &[u8], resolver: &dyn Resolver) -> Map<String, Value> {
    let mut out = Map::new();
    let json = main.trim_ascii_start().first() == Some(&b'{');
    if !json || main.len() > ANSWER_AHEAD_MAX || resolver.base_dir().is_none() {
        return out;
    }
    let Ok(named) = serde_json::from_slice::<Named>(main) else { return out };
    for uri in named.buffers.into_iter().chain(named.images).filter_map(|u| u.uri) {
        if uri.starts_with("data:") || out.contains_key(&uri) {
            continue;
        }
        let answer = match resource(&uri, resolver, true) {
            Reply::Path(path, size) => json!({"path": path, "size": size}),
            Reply::Missing(reason) => json!({"reason": reason}),
            Reply::Bytes(_) => continue,
        };
        out.insert(uri, answer);
    }
    out
}

/// meshcheck's answer to the validator's request for a resource.
enum Reply {
    /// A plain file on disk that Node reads itself: its path and size.
    Path(String, u64),
    /// The resource's bytes.
    Bytes(Vec<u8>),
    /// Why it cannot be had (the text the validator records).
    Missing(String),
}

/// Resolves a resource the validator asks for. With `local`, a plain file in
/// the resolver's folder is answered with its path (what the resolver would
/// read: the same file, under the same size limit); anything else, and every
/// refusal, comes from the resolver itself, so its messages are the loader's.
fn resource(uri: &str, resolver: &dyn Resolver, local: bool) -> Reply {
    let rel = match classify_uri(uri) {
        UriKind::Relative(p) => p,
        UriKind::Unfetchable(e) => return Reply::Missing(format!("Could not load '{uri}': {}", e.reason())),
        UriKind::Data => return Reply::Missing("data: URIs are read by the validator itself".into()),
    };
    let Some(rel) = normalise(&rel) else {
        return Reply::Missing(format!("Could not load '{uri}': the path leaves the asset's folder"));
    };
    if local
        && let Some((full, size)) = resolver.file(&rel)
        && let Some(path) = wire_path(&full)
    {
        return Reply::Path(path, size);
    }
    match resolver.fetch(&rel) {
        Ok(bytes) => Reply::Bytes(bytes),
        Err(e) => Reply::Missing(format!("Could not load '{uri}': {}", e.reason())),
    }
}

/// A pool of warm validator processes.
///
/// A validation goes to an idle process, or to a new one while the pool is
/// under its limit ([`Validator::limit`]; none by default, so each file
/// validated at once has a process), else to the process with the fewest
/// validations in flight, where it waits in the driver's queue.
pub struct Validator {
    install: Install,
    /// Starts the processes after the first (see [`Spawner`]).
    spawner: Spawner,
    processes: Mutex<Vec<Arc<Process>>>,
    /// Most processes at once.
    limit: AtomicUsize,
    /// Per-file timeout.
    pub timeout: Duration,
    /// The first process's handshake, until [`Validator::ready`] takes it.
    hello: Mutex<Option<Receiver<std::result::Result<Hello, String>>>>,
    /// What the first process said: its version and extensions, or why it did not start.
    started: OnceLock<std::result::Result<Hello, Error>>,
    /// Validations begun ahead of their file's turn ([`Validator::begin_ahead`]),
    /// by the main file's path.
    ahead: Mutex<HashMap<PathBuf, Ahead>>,
}

/// Most validations begun ahead and not yet taken: a run whose files fail
/// before their validation is asked for (so never take theirs) holds at
/// most this many files' bytes.
const AHEAD_MAX_PENDING: usize = 16;

/// A validation begun ahead: the name and bytes it was asked for, and its
/// outcome when it comes.
struct Ahead {
    uri: String,
    bytes: Arc<crate::asset::bytes::Bytes>,
    outcome: Receiver<std::result::Result<Findings, Failure>>,
}

/// A validation's claim on a process: counted in flight until dropped.
struct Claim {
    process: Arc<Process>,
    /// Validations in flight on it before this one.
    ahead: usize,
}

impl Drop for Claim {
    fn drop(&mut self) {
        self.process.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How often a validation whose process ended before it began is tried
/// again on another (a crash or a timeout of a file ahead of it in the
/// queue is not its own).
const RETRIES: usize = 3;

/// Starts Node processes from one thread made with the pool, so that each
/// has the scheduling priority the pool was made with. A process started
/// from the thread that asks for it would take that thread's: the CLI's
/// check workers run niced ([`crate::cli`]'s `yield_to_validator`), and a
/// validator restarted by one of them (after a crash or a timeout) ran
/// niced for the rest of the run. Should the thread not start, processes
/// are started from the caller.
struct Spawner(Option<Mutex<Sender<SyncSender<Result<Process>>>>>);

impl Spawner {
    fn new(install: &Install) -> Spawner {
        let (tx, rx) = channel::<SyncSender<Result<Process>>>();
        let install = install.clone();
        let started = std::thread::Builder::new().name("gltf-validator-spawner".into()).spawn(move || {
            // Ends when the pool (the sender) is dropped.
            for reply in rx {
                let _ = reply.send(Process::spawn(&install, None));
            }
        });
        Spawner(started.ok().map(|_| Mutex::new(tx)))
    }

    fn spawn(&self, install: &Install) -> Result<Process> {
        let (tx, rx) = sync_channel(1);
        let sent = self.0.as_ref().and_then(|s| s.lock().ok()).is_some_and(|s| s.send(tx).is_ok());
        match sent.then(|| rx.recv().ok()).flatten() {
            Some(p) => p,
            None => Process::spawn(install, None),
        }
    }
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validator").field("install", &self.install).field("timeout", &self.timeout).finish()
    }
}

impl Validator {
    /// Locates the validator and starts one process, without waiting for it
    /// to load (a missing Node or package is reported here, before any file
    /// is read; a package that fails to load, by [`Validator::ready`]).
    pub fn start(timeout: Duration) -> Result<Validator> {
        let install = locate()?;
        Validator::with_install(install, timeout)
    }

    /// Starts a pool for a given install (one process, loading in the background).
    pub fn with_install(install: Install, timeout: Duration) -> Result<Validator> {
        let (tx, rx) = sync_channel(1);
        let p = Process::spawn(&install, Some(tx))?;
        Ok(Validator {
            spawner: Spawner::new(&install),
            install,
            processes: Mutex::new(vec![Arc::new(p)]),
            limit: AtomicUsize::new(usize::MAX),
            timeout,
            hello: Mutex::new(Some(rx)),
            started: OnceLock::new(),
            ahead: Mutex::new(HashMap::new()),
        })
    }

    /// Starts processes until `n` are running (at most the limit), so that
    /// the files validated at once each find one already loading (a folder
    /// run starts them while it reads the first files).
    pub fn prestart(&self, n: usize) {
        let Ok(mut all) = self.processes.lock() else { return };
        all.retain(|p| !p.broken.load(Ordering::SeqCst));
        while all.len() < n.min(self.limit.load(Ordering::SeqCst)) {
            match self.spawner.spawn(&self.install) {
                Ok(p) => all.push(Arc::new(p)),
                Err(_) => return, // The next validation reports it.
            }
        }
    }

    /// Keeps at most `n` processes (at least 1): validations beyond them
    /// queue on the least busy. A folder run of small files validates
    /// faster on one process kept busy than on one process per file in
    /// flight, each compiling the validator's code on its own.
    pub fn limit(&self, n: usize) {
        self.limit.store(n.max(1), Ordering::SeqCst);
    }

    /// A process for one validation: an idle one, a new one under the
    /// limit, else the least busy.
    fn claim(&self) -> std::result::Result<Claim, Failure> {
        let mut all = self.processes.lock().map_err(|_| Failure::Crashed("the pool's lock was poisoned".into()))?;
        all.retain(|p| !p.broken.load(Ordering::SeqCst));
        let least = all.iter().min_by_key(|p| p.in_flight.load(Ordering::SeqCst)).cloned();
        let process = match least {
            Some(p) if p.in_flight.load(Ordering::SeqCst) == 0 || all.len() >= self.limit.load(Ordering::SeqCst) => p,
            _ => {
                let p = Arc::new(self.spawner.spawn(&self.install).map_err(|e| Failure::Crashed(e.message))?);
                all.push(p.clone());
                p
            }
        };
        let ahead = process.in_flight.fetch_add(1, Ordering::SeqCst);
        Ok(Claim { process, ahead })
    }

    /// Waits for the first process's handshake: the validator's version and
    /// extensions, or the environment error (with the command that fixes it)
    /// when Node could not load the package.
    pub fn ready(&self) -> Result<&Hello> {
        self.started
            .get_or_init(|| {
                let rx = self.hello.lock().ok().and_then(|mut h| h.take());
                match rx.map(|rx| rx.recv_timeout(STARTUP)) {
                    Some(Ok(Ok(hello))) => Ok(hello),
                    Some(Ok(Err(why))) => Err(not_found(&why)),
                    Some(Err(RecvTimeoutError::Timeout)) => Err(not_found("the Node process did not start in time")),
                    Some(Err(RecvTimeoutError::Disconnected)) | None => {
                        Err(not_found("the Node process exited at start; is the package intact?"))
                    }
                }
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The environment error when the first process is known to have failed
    /// to load the validator (without waiting for it).
    pub fn failed(&self) -> Option<Error> {
        self.started.get().and_then(|s| s.as_ref().err().cloned())
    }

    /// The validator's version (from the first process's handshake).
    pub fn version(&self) -> Result<String> {
        self.ready().map(|h| h.version.clone())
    }

    /// The process-wide default pool, started on first use (and waited for:
    /// a package that does not load is the error here).
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
                // The service refuses to start without the validator: wait for it here.
                let v = Validator::start(timeout)?;
                v.ready()?;
                Ok(Arc::new(v))
            })
            .clone()
    }

    /// Validates one file's main bytes, serving external resources from `resolver`.
    /// `uri` is the name shown in messages (a file name, never a local path).
    pub fn validate(&self, uri: &str, bytes: &[u8], resolver: &dyn Resolver) -> std::result::Result<Findings, Failure> {
        self.validate_main(uri, Main { bytes: MainBytes::Held(bytes), path: None }, resolver)
    }

    /// Whether a validation of the file at `path` was begun ahead
    /// ([`Validator::begin_ahead`]) and waits to be taken: for the same
    /// request, [`Validator::validate_main`] then only waits for its
    /// outcome, and needs no thread of its own beside the load.
    pub fn begun_ahead(&self, path: &Path) -> bool {
        self.ahead.lock().is_ok_and(|a| a.contains_key(path))
    }

    /// [`Validator::validate`] of a main file that may be a plain file on
    /// disk ([`Main::path`]), which Node then reads itself.
    pub fn validate_main(
        &self,
        uri: &str,
        main: Main<'_>,
        resolver: &dyn Resolver,
    ) -> std::result::Result<Findings, Failure> {
        // A validation of the same request begun ahead: its outcome.
        let begun = main.path.and_then(|p| self.ahead.lock().ok()?.remove(p));
        if let Some(a) = begun
            && let MainBytes::Held(bytes) = main.bytes
            && a.uri == uri
            && a.bytes[..] == *bytes
            && let Ok(outcome) = a.outcome.recv()
        {
            return outcome;
        }
        self.validate_fresh(uri, main, resolver)
    }

    /// [`Validator::validate_main`] without looking for a validation begun ahead.
    fn validate_fresh(
        &self,
        uri: &str,
        main: Main<'_>,
        resolver: &dyn Resolver,
    ) -> std::result::Result<Findings, Failure> {
        if let Some(Err(e)) = self.started.get() {
            return Err(Failure::Crashed(e.message.clone()));
        }
        for _ in 0..RETRIES {
            let claim = self.claim()?;
            match claim.process.validate(uri, main, resolver, self.timeout, claim.ahead) {
                Attempt::Done(result) => return result,
                // A package that does not load ends every process before
                // its first file: that is the answer, not a reason to retry.
                Attempt::Again => self.ready().map_err(|e| Failure::Crashed(e.message)).map(drop)?,
            }
        }
        Err(Failure::Crashed("the validator's processes kept ending before this file's turn".into()))
    }

    /// Begins validating a plain file on disk before its turn comes, on a
    /// thread of its own: `uri`, `bytes` (what was read from `path`) and
    /// `resolver` as [`Validator::validate_main`] will be asked for them.
    /// When that call comes with the same path, name and bytes, it returns
    /// this outcome instead of validating again; otherwise (the file changed
    /// in between, or it is never asked for) the outcome is not used. A
    /// folder run begins each worker's next file this way, so that Node's
    /// queue holds more files than there are workers and it does not wait
    /// while the workers finish their checks (BENCHMARKS.md, "SPEC-001
    /// overhead"). Nothing is begun once the package is known not to load,
    /// nor while `AHEAD_MAX_PENDING` outcomes wait to be taken.
    pub fn begin_ahead(
        self: &Arc<Self>,
        uri: String,
        path: PathBuf,
        bytes: Arc<crate::asset::bytes::Bytes>,
        resolver: Arc<dyn Resolver>,
    ) {
        if matches!(self.started.get(), Some(Err(_))) {
            return;
        }
        let Ok(mut ahead) = self.ahead.lock() else { return };
        if ahead.contains_key(&path) || ahead.len() >= AHEAD_MAX_PENDING {
            return;
        }
        let (tx, rx) = sync_channel(1);
        ahead.insert(path.clone(), Ahead { uri: uri.clone(), bytes: bytes.clone(), outcome: rx });
        drop(ahead);
        let pool = self.clone();
        let held = bytes.clone();
        let spawned = waiters::run(Box::new(move || {
            let outcome =
                pool.validate_fresh(&uri, Main { bytes: MainBytes::Held(&held), path: Some(&path) }, resolver.as_ref());
            let _ = tx.send(outcome);
        }));
        if spawned.is_err()
            && let Ok(mut ahead) = self.ahead.lock()
        {
            ahead.retain(|_, a| !Arc::ptr_eq(&a.bytes, &bytes));
        }
    }

    /// Name and version for the report's `validator` field.
    pub fn info(&self) -> crate::report::EngineInfo {
        let version = self.version().unwrap_or_else(|_| "unknown".into());
        crate::report::EngineInfo { name: "Khronos glTF-Validator".into(), version }
    }
}

/// Threads that wait on Node for validations begun ahead, kept between
/// them. A thread started and ended for each file cost about 110 µs of
/// CPU on the development machine (its stack mapped, guarded and unmapped,
/// every core's TLB flushed), a tenth of a millisecond on every small file
/// of a folder run. A job is never queued: it goes to an idle thread, or to
/// a new one; a thread idle for [`waiters::IDLE`] ends.
mod waiters {
    use std::sync::Mutex;
    use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
    use std::time::Duration;

    /// A job: it runs on a thread of its own at once, so it may wait on
    /// another job (none waits in a queue for a thread).
    pub type Job = Box<dyn FnOnce() + Send + 'static>;

    /// How long an idle thread waits for another job before it ends.
    pub const IDLE: Duration = Duration::from_secs(2);

    /// Each idle thread's sender, with the thread's number.
    static IDLE_THREADS: Mutex<Vec<(u64, Sender<Job>)>> = Mutex::new(Vec::new());
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// Runs `job` on an idle thread, or on a new one; `Err` only when no
    /// thread could be started (the job is dropped).
    pub fn run(mut job: Job) -> std::io::Result<()> {
        loop {
            let idle = IDLE_THREADS.lock().map_or(None, |mut v| v.pop());
            let Some((_, tx)) = idle else { break };
            match tx.send(job) {
                Ok(()) => return Ok(()),
                // That thread ended meanwhile: the next one, or a new one.
                Err(e) => job = e.0,
            }
        }
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new().name("validate-ahead".into()).spawn(move || serve(id, job, &tx, &rx))?;
        Ok(())
    }

    /// A thread's life: its first job, then each job given to it while it
    /// is listed idle, until it has waited [`IDLE`] for one.
    fn serve(id: u64, first: Job, tx: &Sender<Job>, rx: &Receiver<Job>) {
        let mut job = first;
        loop {
            // A job that panics loses its outcome's sender (its waiter sees
            // the channel closed), not the thread.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let Ok(mut idle) = IDLE_THREADS.lock() else { return };
            idle.push((id, tx.clone()));
            drop(idle);
            job = match rx.recv_timeout(IDLE) {
                Ok(next) => next,
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let Ok(mut idle) = IDLE_THREADS.lock() else { return };
                    if let Some(at) = idle.iter().position(|(i, _)| *i == id) {
                        // Still listed: nobody can send to it any more.
                        idle.swap_remove(at);
                        return;
                    }
                    drop(idle);
                    // Taken off the list by a caller, whose job is on its way.
                    match rx.recv() {
                        Ok(next) => next,
                        Err(_) => return,
                    }
                }
            };
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        #[test]
        fn jobs_run_on_threads_that_are_kept_and_none_waits() {
            // Ten jobs that each wait until all ten have started: they must
            // run at once (with one queued, the others would wait for it
            // in vain until the timeout).
            let n = 10;
            let started = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (done_tx, done_rx) = channel::<(std::thread::ThreadId, bool)>();
            for _ in 0..n {
                let (started, done) = (started.clone(), done_tx.clone());
                run(Box::new(move || {
                    started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let until = std::time::Instant::now() + Duration::from_secs(10);
                    while started.load(std::sync::atomic::Ordering::SeqCst) < n && std::time::Instant::now() < until {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let all = started.load(std::sync::atomic::Ordering::SeqCst) == n;
                    done.send((std::thread::current().id(), all)).unwrap();
                }))
                .unwrap();
            }
            let first: Vec<_> = (0..n).map(|_| done_rx.recv_timeout(Duration::from_secs(20)).unwrap()).collect();
            assert!(first.iter().all(|(_, all)| *all), "a job waited for a thread");
            let first: Vec<_> = first.into_iter().map(|(t, _)| t).collect();
            // Later jobs reuse the threads the first ones left idle (each
            // lists itself idle just after its job).
            let until = std::time::Instant::now() + Duration::from_secs(10);
            while IDLE_THREADS.lock().unwrap().len() < n && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            let (tx, rx) = channel();
            for _ in 0..n {
                let tx = tx.clone();
                run(Box::new(move || tx.send(std::thread::current().id()).unwrap())).unwrap();
            }
            let again: Vec<_> = (0..n).map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
            assert!(again.iter().all(|t| first.contains(t)), "a new thread was started for a job while threads idled");
            // A panicking job leaves its thread serving.
            run(Box::new(|| panic!("a job that panics"))).unwrap();
            let (tx, rx) = channel();
            run(Box::new(move || tx.send(()).unwrap())).unwrap();
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asset::bundle::{DirResolver, NoResources};

    /// A process's nice value, from /proc/PID/stat (field 19).
    #[cfg(target_os = "linux")]
    fn nice_of(pid: u32) -> i32 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
        fields[16].parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_started_for_a_niced_thread_has_the_pools_priority() {
        let v = Validator::start(Duration::from_secs(60)).expect("the validator is installed (npm ci)");
        v.limit(2);
        // SAFETY: reads the calling thread's scheduling value.
        let base = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: lowers this thread's own priority.
                unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, (base + 5).min(19)) };
                v.prestart(2);
            });
        });
        let pids: Vec<u32> = v.processes.lock().unwrap().iter().map(|p| p.child.lock().unwrap().id()).collect();
        assert_eq!(pids.len(), 2);
        for pid in pids {
            assert_eq!(nice_of(pid), base, "process {pid}");
        }
    }

    #[test]
    fn a_gltfs_plain_files_and_refusals_are_answered_ahead() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("model.bin"), [0u8; 12]).unwrap();
        std::fs::write(dir.path().join("tex.png"), [1u8; 5]).unwrap();
        let doc = br#" {"asset": {"version": "2.0"},
            "buffers": [{"uri": "model.bin", "byteLength": 12}, {"byteLength": 4},
                        {"uri": "data:application/octet-stream;base64,AAAA", "byteLength": 3}],
            "images": [{"uri": "tex.png"}, {"uri": "missing.png"}, {"uri": "../outside.png"},
                       {"uri": "model.bin"}, {"bufferView": 0}]}"#;
        let resolver = DirResolver::new(dir.path());
        let known = answered_ahead(doc, &resolver);
        let keys: Vec<&str> = known.keys().map(String::as_str).collect();
        assert_eq!(keys, ["model.bin", "tex.png", "missing.png", "../outside.png"], "data: and repeats left out");
        assert_eq!(known["model.bin"]["size"], 12);
        let path = known["tex.png"]["path"].as_str().unwrap();
        assert_eq!(std::fs::read(path).unwrap(), [1u8; 5]);
        // Refusals carry the reason the validator would be told on asking.
        for uri in ["missing.png", "../outside.png"] {
            let Reply::Missing(reason) = resource(uri, &resolver, true) else { panic!("{uri} is refused") };
            assert_eq!(known[uri], json!({ "reason": reason }), "{uri}");
        }
        // Nothing ahead without a folder, for a GLB, or for a document that does not parse.
        assert!(answered_ahead(doc, &NoResources).is_empty());
        assert!(answered_ahead(b"glTF\x02\x00\x00\x00", &resolver).is_empty());
        assert!(answered_ahead(b"{\"buffers\": 3}", &resolver).is_empty());
    }
}
