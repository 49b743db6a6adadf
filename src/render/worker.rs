//! Drawing in a worker process that is replaced before it grows.
//!
//! Mesa's lavapipe (the software Vulkan driver used where there is no GPU)
//! keeps about 1.4 MB for every render pass that draws and never gives it
//! back (BENCHMARKS.md, "Full mode, FlightHelmet"): a long-running server
//! that renders in process grows until it is killed. The service therefore
//! draws in a child process (`meshcheck render-worker`, hidden) and replaces
//! it after [`Limits::renders`] requests or once its resident memory passes
//! [`Limits::rss_bytes`], whichever comes first. The operating system takes
//! the leaked memory back with the process.
//!
//! - [`Drawer`]: where stills are drawn, in this process or in a worker. The
//!   engine, the render endpoint and inspect take one; the CLI draws locally.
//! - Protocol on the child's stdin and stdout, one request at a time: a frame
//!   is a little-endian `u32` length and a JSON header, then a `u64` length
//!   and a payload. Requests carry the asset bytes; answers carry the stills
//!   as raw RGBA (their sizes in the header) or the GIF.
//! - A worker that dies, answers garbage or takes longer than
//!   [`Limits::timeout`] is killed; that request fails with RENDER_FAILED and
//!   the next one starts a fresh worker.
//! - [`Pool::restarts`] counts the workers retired, by why ([`Restarts`]):
//!   the server's metrics read it at every scrape.

use super::renderer::Renderer;
use super::rig::Angle;
use super::types::{Background, Rendered, Request, Still};
use crate::asset::{self, Asset, Input, LoadOptions};
use crate::error::{Error, ErrorCode, Result};
use crate::report::views::AdapterInfo;
use serde_json::{Value, json};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest header accepted on the pipe.
const MAX_HEADER: u32 = 1 << 20;
/// Largest payload accepted on the pipe (inputs are at most 250 MB).
const MAX_PAYLOAD: u64 = 1 << 30;

/// When a worker is replaced, and how long one request may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Requests before the worker is replaced.
    pub renders: u32,
    /// Resident memory after which the worker is replaced.
    pub rss_bytes: u64,
    /// Longest a request may take before the worker is killed.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { renders: 50, rss_bytes: 1 << 30, timeout: Duration::from_secs(300) }
    }
}

/// Where stills are drawn.
#[derive(Clone, Default)]
pub enum Drawer {
    /// This process's device ([`Renderer::shared`]).
    #[default]
    Local,
    /// A replaceable worker process.
    Worker(Arc<Pool>),
}

impl std::fmt::Debug for Drawer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Drawer::Local => f.write_str("Local"),
            Drawer::Worker(_) => f.write_str("Worker"),
        }
    }
}

impl Drawer {
    /// Whether a render can start: the device exists, here or in the
    /// worker (RENDER_FAILED otherwise, an environment error, never a
    /// failed asset).
    pub fn ready(&self) -> Result<()> {
        match self {
            Drawer::Local => Renderer::shared().map(|_| ()),
            // A worker that died between requests may not yet look dead
            // (a large process takes a while to exit on a busy machine):
            // the failed hello replaced it, and a second asks a fresh one.
            Drawer::Worker(pool) => {
                let hello = || pool.call(&json!({"op": "hello"}), &[]).map(|_| ());
                hello().or_else(|_| hello())
            }
        }
    }

    /// Draws the stills of `req`. A worker gets `source` (the input's name
    /// and bytes) and loads it itself; the local device draws `asset`.
    pub fn render(&self, source: &Source, asset: &Asset, req: &Request) -> Result<(Rendered, AdapterInfo)> {
        match self {
            Drawer::Local => {
                let r = Renderer::shared()?;
                Ok((r.render(asset, req)?, r.adapter().clone()))
            }
            Drawer::Worker(pool) => pool.render(source, req),
        }
    }

    /// Draws a turntable GIF.
    pub fn turntable(
        &self,
        source: &Source,
        asset: &Asset,
        frames: u32,
        size: u32,
        background: Background,
    ) -> Result<Vec<u8>> {
        match self {
            Drawer::Local => Renderer::shared()?.turntable(asset, frames, size, background),
            Drawer::Worker(pool) => pool.turntable(source, frames, size, background),
        }
    }
}

/// An input as a worker receives it: the main file's name and bytes, and
/// the folder its external resources are read from when they are files on
/// disk (the CLI's inputs; the service's inputs carry everything inline).
#[derive(Debug, Clone, Default)]
pub struct Source {
    /// The file name.
    pub filename: String,
    /// The bytes (empty when drawing locally: the asset is already loaded).
    pub bytes: Vec<u8>,
    /// The folder beside a .gltf on disk, if its resources are files.
    pub dir: Option<PathBuf>,
}

impl Source {
    /// What `drawer` needs of `input`: a copy of its bytes for a worker,
    /// nothing for the local device.
    pub fn for_drawer(drawer: &Drawer, input: &Input) -> Source {
        match drawer {
            Drawer::Local => Source::default(),
            Drawer::Worker(_) => Source {
                filename: input.filename.clone(),
                bytes: input.bytes.clone(),
                dir: input.resolver.base_dir().map(PathBuf::from),
            },
        }
    }
}

/// One live worker.
struct Proc {
    child: Child,
    stdin: BufWriter<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
    served: u32,
}

impl Proc {
    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Resident memory of the worker (Linux), in bytes.
    fn rss(&self) -> Option<u64> {
        let statm = std::fs::read_to_string(format!("/proc/{}/statm", self.child.id())).ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * 4096)
    }
}

/// Workers retired so far, by why. Each is replaced by a fresh one on the
/// next request (a retirement at the end of a run is replaced by none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restarts {
    /// Retired after serving [`Limits::renders`] requests.
    pub renders: u64,
    /// Retired once its resident memory passed [`Limits::rss_bytes`].
    pub memory: u64,
    /// Killed because a request failed: it stopped answering, answered
    /// garbage or took longer than [`Limits::timeout`] (or it died between
    /// requests and was still exiting when the next came).
    pub failed: u64,
    /// Found dead before a request (killed or crashed between requests).
    pub exited: u64,
}

/// Why a worker was retired.
#[derive(Debug, Clone, Copy)]
enum Retire {
    Renders,
    Memory,
    Failed,
    Exited,
}

/// The worker process behind [`Drawer::Worker`]: one at a time (the device
/// draws one request at a time anyway), started on first use.
pub struct Pool {
    exe: PathBuf,
    limits: Limits,
    proc: Mutex<Option<Proc>>,
    started: std::sync::atomic::AtomicU32,
    restarts: Mutex<Restarts>,
}

impl Pool {
    /// A pool running `exe render-worker`.
    pub fn new(exe: PathBuf, limits: Limits) -> Pool {
        Pool {
            exe,
            limits,
            proc: Mutex::new(None),
            started: std::sync::atomic::AtomicU32::new(0),
            restarts: Mutex::new(Restarts::default()),
        }
    }

    /// Workers started so far.
    pub fn started(&self) -> u32 {
        self.started.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Workers retired so far, by why.
    pub fn restarts(&self) -> Restarts {
        *self.restarts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Stops a worker and counts why.
    fn retire(&self, proc: Proc, why: Retire) {
        proc.stop();
        let mut r = self.restarts.lock().unwrap_or_else(|p| p.into_inner());
        match why {
            Retire::Renders => r.renders += 1,
            Retire::Memory => r.memory += 1,
            Retire::Failed => r.failed += 1,
            Retire::Exited => r.exited += 1,
        }
    }

    /// The live worker's process id, if one is running.
    pub fn pid(&self) -> Option<u32> {
        self.proc.lock().unwrap_or_else(|p| p.into_inner()).as_ref().map(|p| p.child.id())
    }

    fn spawn(&self) -> Result<Proc> {
        let mut child = Command::new(&self.exe)
            .arg("render-worker")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| failed(format!("cannot start the render worker {}: {e}", self.exe.display())))?;
        self.started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let stdin = BufWriter::new(child.stdin.take().ok_or_else(|| failed("the render worker has no stdin"))?);
        let stdout = BufReader::new(child.stdout.take().ok_or_else(|| failed("the render worker has no stdout"))?);
        Ok(Proc { child, stdin, stdout: Some(stdout), served: 0 })
    }

    /// Sends one request and reads its answer; replaces the worker when it
    /// fails, times out or has served its share.
    fn call(&self, header: &Value, payload: &[u8]) -> Result<(Value, Vec<u8>)> {
        let mut slot = self.proc.lock().unwrap_or_else(|p| p.into_inner());
        // A worker that died since its last answer is replaced before use.
        if slot.as_mut().is_some_and(|p| !matches!(p.child.try_wait(), Ok(None)))
            && let Some(p) = slot.take()
        {
            eprintln!("meshcheck: the render worker exited; starting another");
            self.retire(p, Retire::Exited);
        }
        if slot.is_none() {
            *slot = Some(self.spawn()?);
        }
        let proc = slot.as_mut().expect("a worker was just started");
        let outcome = exchange(proc, header, payload, self.limits.timeout);
        let replace = match &outcome {
            Err(_) => Some(Retire::Failed),
            Ok(_) => {
                if header.get("op").and_then(Value::as_str) != Some("hello") {
                    proc.served += 1;
                }
                if proc.served >= self.limits.renders {
                    Some(Retire::Renders)
                } else if proc.rss().is_some_and(|r| r >= self.limits.rss_bytes) {
                    Some(Retire::Memory)
                } else {
                    None
                }
            }
        };
        if let Some(why) = replace
            && let Some(p) = slot.take()
        {
            self.retire(p, why);
        }
        let (head, body) = outcome?;
        if head.get("ok").and_then(Value::as_bool) != Some(true) {
            return Err(error_from(&head));
        }
        Ok((head, body))
    }

    fn render(&self, source: &Source, req: &Request) -> Result<(Rendered, AdapterInfo)> {
        let header = json!({
            "op": "render",
            "filename": source.filename,
            "dir": source.dir,
            "angles": req.angles,
            "size": req.size,
            "background": req.background.to_string(),
            "watermark": req.watermark,
        });
        let (head, body) = self.call(&header, &source.bytes)?;
        decode_rendered(&head, body)
    }

    fn turntable(&self, source: &Source, frames: u32, size: u32, background: Background) -> Result<Vec<u8>> {
        let header = json!({
            "op": "turntable",
            "filename": source.filename,
            "dir": source.dir,
            "frames": frames,
            "size": size,
            "background": background.to_string(),
        });
        self.call(&header, &source.bytes).map(|(_, gif)| gif)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if let Some(p) = self.proc.lock().unwrap_or_else(|p| p.into_inner()).take() {
            p.stop();
        }
    }
}

fn failed(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::RenderFailed, message)
}

/// Writes the request, then reads the answer on a helper thread so that a
/// hung worker can be killed after `timeout`.
fn exchange(proc: &mut Proc, header: &Value, payload: &[u8], timeout: Duration) -> Result<(Value, Vec<u8>)> {
    write_frame(&mut proc.stdin, header, &[payload])
        .and_then(|_| proc.stdin.flush())
        .map_err(|e| failed(format!("the render worker stopped taking requests: {e}")))?;
    let mut stdout = proc.stdout.take().ok_or_else(|| failed("the render worker's output was lost"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let answer = read_frame(&mut stdout);
        let _ = tx.send((answer, stdout));
    });
    match rx.recv_timeout(timeout) {
        Ok((answer, stdout)) => {
            proc.stdout = Some(stdout);
            answer.map_err(|e| failed(format!("the render worker stopped: {e}")))
        }
        Err(_) => {
            // Killing the worker ends the reader thread (its pipe closes).
            let _ = proc.child.kill();
            Err(failed(format!("the render worker did not answer within {} s", timeout.as_secs())))
        }
    }
}

/// Writes a frame: header, then the payload parts as one payload.
pub fn write_frame(w: &mut impl Write, header: &Value, parts: &[&[u8]]) -> std::io::Result<()> {
    let head = serde_json::to_vec(header)?;
    w.write_all(&(head.len() as u32).to_le_bytes())?;
    w.write_all(&head)?;
    let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
    w.write_all(&total.to_le_bytes())?;
    for p in parts {
        w.write_all(p)?;
    }
    Ok(())
}

/// Reads a frame (bounded lengths).
pub fn read_frame(r: &mut impl Read) -> std::io::Result<(Value, Vec<u8>)> {
    let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
    let mut n4 = [0u8; 4];
    r.read_exact(&mut n4)?;
    let hlen = u32::from_le_bytes(n4);
    if hlen > MAX_HEADER {
        return Err(bad("frame header too long"));
    }
    let mut head = vec![0u8; hlen as usize];
    r.read_exact(&mut head)?;
    let header: Value = serde_json::from_slice(&head).map_err(|e| bad(&e.to_string()))?;
    let mut n8 = [0u8; 8];
    r.read_exact(&mut n8)?;
    let plen = u64::from_le_bytes(n8);
    if plen > MAX_PAYLOAD {
        return Err(bad("frame payload too long"));
    }
    let mut payload = Vec::new();
    r.take(plen).read_to_end(&mut payload)?;
    if payload.len() as u64 != plen {
        return Err(bad("frame payload cut short"));
    }
    Ok((header, payload))
}

fn error_from(head: &Value) -> Error {
    let code = head
        .get("code")
        .and_then(|c| serde_json::from_value::<ErrorCode>(c.clone()).ok())
        .unwrap_or(ErrorCode::RenderFailed);
    let message = head.get("message").and_then(Value::as_str).unwrap_or("the render worker failed");
    let mut e = Error::new(code, message);
    if let Some(d) = head.get("detail").filter(|d| !d.is_null()) {
        e = e.with_detail(d.clone());
    }
    e
}

fn decode_rendered(head: &Value, body: Vec<u8>) -> Result<(Rendered, AdapterInfo)> {
    let garbled = |what: &str| failed(format!("the render worker's answer is garbled ({what})"));
    let adapter: AdapterInfo = serde_json::from_value(head["adapter"].clone()).map_err(|_| garbled("adapter"))?;
    let list = head["stills"].as_array().ok_or_else(|| garbled("stills"))?;
    let mut stills = Vec::with_capacity(list.len());
    let mut at = 0usize;
    for s in list {
        let angle: Angle = serde_json::from_value(s["angle"].clone()).map_err(|_| garbled("angle"))?;
        let size = s["size"].as_u64().filter(|&n| n > 0 && n <= 8192).ok_or_else(|| garbled("size"))? as u32;
        let n = size as usize * size as usize * 4;
        let pixels = body.get(at..at + n).ok_or_else(|| garbled("pixels"))?.to_vec();
        at += n;
        let image = image::RgbaImage::from_raw(size, size, pixels).ok_or_else(|| garbled("image"))?;
        let visible_pixels = s["visible_pixels"].as_u64().ok_or_else(|| garbled("visible_pixels"))?;
        stills.push(Still { angle, image, visible_pixels });
    }
    let notes = serde_json::from_value(head["notes"].clone()).unwrap_or_default();
    let rendered = Rendered {
        stills,
        triangles: head["triangles"].as_u64().unwrap_or(0),
        draw_calls: head["draw_calls"].as_u64().unwrap_or(0),
        render_ms: head["render_ms"].as_f64().unwrap_or(0.0),
        notes,
    };
    Ok((rendered, adapter))
}

/// `meshcheck render-worker`: answers requests on stdin/stdout until stdin
/// closes. Never prints anything else on stdout.
pub fn serve_stdio() -> i32 {
    let mut input = BufReader::new(std::io::stdin().lock());
    let mut output = BufWriter::new(std::io::stdout().lock());
    loop {
        let (header, payload) = match read_frame(&mut input) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return 0,
            Err(e) => {
                eprintln!("meshcheck render-worker: bad request frame: {e}");
                return 1;
            }
        };
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(&header, payload)))
            .unwrap_or_else(|_| Err(Error::internal("the render worker panicked")));
        let written = match answer {
            Ok((head, parts)) => {
                let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
                write_frame(&mut output, &head, &refs)
            }
            Err(e) => write_frame(
                &mut output,
                &json!({"ok": false, "code": e.code, "message": e.message, "detail": e.detail}),
                &[],
            ),
        };
        if written.and_then(|_| output.flush()).is_err() {
            return 1;
        }
    }
}

fn handle(header: &Value, payload: Vec<u8>) -> Result<(Value, Vec<Vec<u8>>)> {
    if header.get("op").and_then(Value::as_str) == Some("hello") {
        let renderer = Renderer::shared()?;
        return Ok((json!({"ok": true, "adapter": renderer.adapter()}), Vec::new()));
    }
    let text = |k: &str| header.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let background = Background::parse(&text("background")).map_err(Error::bad_request)?;
    let input = match header.get("dir").and_then(Value::as_str) {
        // The folder a CLI input's resources lie in, as the caller resolves them.
        Some(dir) => Input {
            filename: text("filename"),
            bytes: payload,
            resolver: Box::new(asset::bundle::DirResolver::new(dir)),
        },
        None => Input::from_bytes(text("filename"), payload),
    };
    let opened = asset::open(input)?;
    let asset = asset::load_opened_with(&opened, LoadOptions { keep_images: true })?;
    drop(opened);
    let renderer = Renderer::shared()?;
    match header.get("op").and_then(Value::as_str) {
        Some("render") => {
            let angles: Vec<Angle> = serde_json::from_value(header["angles"].clone())
                .map_err(|e| Error::bad_request(format!("angles: {e}")))?;
            let req = Request {
                angles,
                size: header["size"].as_u64().unwrap_or(crate::report::views::DEFAULT_SIZE as u64) as u32,
                background,
                watermark: header.get("watermark").and_then(Value::as_str).map(str::to_string),
            };
            let out = renderer.render(&asset, &req)?;
            let stills: Vec<Value> = out
                .stills
                .iter()
                .map(|s| json!({"angle": s.angle, "size": s.image.width(), "visible_pixels": s.visible_pixels}))
                .collect();
            let head = json!({
                "ok": true,
                "adapter": renderer.adapter(),
                "stills": stills,
                "triangles": out.triangles,
                "draw_calls": out.draw_calls,
                "render_ms": out.render_ms,
                "notes": out.notes,
            });
            Ok((head, out.stills.into_iter().map(|s| s.image.into_raw()).collect()))
        }
        Some("turntable") => {
            let frames = header["frames"].as_u64().unwrap_or(36) as u32;
            let size = header["size"].as_u64().unwrap_or(512) as u32;
            let gif = renderer.turntable(&asset, frames, size, background)?;
            Ok((json!({"ok": true}), vec![gif]))
        }
        _ => Err(Error::bad_request("unknown render-worker operation")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_refuse_garbage() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &json!({"op": "render"}), &[b"abc", b"de"]).unwrap();
        let (h, p) = read_frame(&mut buf.as_slice()).unwrap();
        assert_eq!((h["op"].as_str(), p.as_slice()), (Some("render"), &b"abcde"[..]));
        let cut = &buf[..buf.len() - 1];
        assert!(read_frame(&mut &cut[..]).is_err(), "a payload cut short");
        let huge = [0xFFu8, 0xFF, 0xFF, 0xFF];
        assert!(read_frame(&mut &huge[..]).is_err(), "a header length beyond the cap");
        assert!(read_frame(&mut &b""[..]).is_err());
    }

    /// A worker that exits at once (here a program that is no worker) fails
    /// its request, is counted as failed and is replaced on the next one.
    #[test]
    #[cfg(unix)]
    fn a_failing_worker_is_counted_and_replaced() {
        let pool =
            Pool::new(PathBuf::from("/bin/false"), Limits { timeout: Duration::from_secs(20), ..Limits::default() });
        assert_eq!((pool.started(), pool.restarts()), (0, Restarts::default()));
        for _ in 0..2 {
            let e = pool.call(&json!({"op": "hello"}), &[]).unwrap_err();
            assert_eq!(e.code, ErrorCode::RenderFailed);
        }
        assert_eq!(pool.started(), 2);
        assert_eq!(pool.restarts(), Restarts { failed: 2, ..Restarts::default() });
        assert_eq!(pool.pid(), None, "no worker left running");
    }

    #[test]
    fn worker_errors_keep_their_code() {
        let e = error_from(&json!({"ok": false, "code": "MALFORMED_GLTF", "message": "bad", "detail": {"x": 1}}));
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::MalformedGltf, "bad"));
        assert_eq!(error_from(&json!({"ok": false})).code, ErrorCode::RenderFailed);
    }
}
