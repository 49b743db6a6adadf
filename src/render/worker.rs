//! Drawing in a worker process that is replaced before it grows.
//!
//! Mesa's lavapipe (the software Vulkan driver used where there is no GPU)
//! keeps about 1.4 MB for every render pass that draws and never gives it
//! back (BENCHMARKS.md, "Full mode, FlightHelmet"): a long-running server
//! that renders in process grows until it is killed. The service therefore
//! draws in child processes (`meshcheck render-worker`, hidden) and replaces
//! each after [`Limits::renders`] requests or once its resident memory
//! passes [`Limits::rss_bytes`], whichever comes first. The operating system
//! takes the leaked memory back with the process.
//!
//! - [`Pool`]: up to N workers ([`default_workers`] of the cores), so that
//!   renders of separate requests run at once. A request takes an idle
//!   worker or waits its turn (first come first served, at most
//!   [`Limits::timeout`]); each worker gets `LP_NUM_THREADS` = cores / N
//!   ([`threads_per_worker`]) so that N workers drawing at once do not run
//!   N times as many llvmpipe threads as there are cores.
//!
//! - [`Drawer`]: where stills are drawn, in this process or in a worker. The
//!   engine, the render endpoint and inspect take one; the CLI draws locally.
//! - Protocol on the child's stdin and stdout, one request at a time: a frame
//!   is a little-endian `u32` length and a JSON header, then a `u64` length
//!   and a payload. Requests carry the asset bytes; answers carry the stills
//!   as raw RGBA (their sizes in the header) or the GIF, and say which
//!   worker served them and when ([`Served`]).
//! - A worker that dies, answers garbage or takes longer than
//!   [`Limits::timeout`] is killed; that request fails with RENDER_FAILED and
//!   the next one to use its slot starts a fresh worker. The other workers
//!   carry on.
//! - [`Pool::restarts`] counts the workers retired, by why ([`Restarts`]):
//!   the server's metrics read it at every scrape.

use super::renderer::Renderer;
use super::rig::Angle;
use super::types::{Background, Rendered, Request, Still};
use crate::asset::{self, Asset, Input, LoadOptions};
use crate::error::{Error, ErrorCode, Result};
use crate::report::views::AdapterInfo;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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
                bytes: input.bytes.to_vec(),
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

    /// Whether the process is still running (not exited, not a zombie).
    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
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

/// Which worker process served a request, and when: Unix time in
/// milliseconds, from reading the request to having its answer ready, as the
/// worker measured it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Served {
    /// The worker's process id.
    pub pid: u32,
    /// When the worker had read the request.
    pub started_ms: f64,
    /// When its answer was ready to write.
    pub ended_ms: f64,
}

/// The default number of render workers for `cores` cores: one per two
/// cores, at least one (docs/service.md, "The render worker", has the
/// measurements behind it). llvmpipe already spreads one render over every
/// core, so workers beyond that only help where part of each request is
/// serial (opening the input, decoding textures, the answer on the pipe).
pub fn default_workers(cores: usize) -> usize {
    (cores / 2).max(1)
}

/// The cores of this machine (1 when unknown).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// llvmpipe's threads per worker for `workers` workers on `cores` cores:
/// the cores shared out, at least one each, so that N workers drawing at
/// once do not run N times as many threads as there are cores. `None` for
/// a single worker (llvmpipe's own default: every core).
pub fn threads_per_worker(workers: usize, cores: usize) -> Option<usize> {
    (workers > 1).then(|| (cores / workers).max(1))
}

/// The pool's shared book, under one lock.
struct Book {
    /// Slots no request holds: a running worker, or none (one is started
    /// when the slot is next used).
    idle: Vec<Option<Proc>>,
    /// Requests holding a slot now.
    busy: usize,
    /// Process ids of the workers serving those requests (once started).
    busy_pids: Vec<u32>,
    /// Tickets of the callers waiting for a slot, oldest first.
    queue: VecDeque<u64>,
    /// The next caller's ticket.
    next_ticket: u64,
}

/// The worker processes behind [`Drawer::Worker`]: up to [`Pool::size`] of
/// them, each drawing one request at a time and each replaced on its own
/// [`Limits`]. A request takes an idle worker (a running one before an
/// unstarted slot, so a pool that is never busy runs one process); when
/// every worker is busy it waits its turn, first come first served, for at
/// most [`Limits::timeout`]. Workers start on first use.
pub struct Pool {
    exe: PathBuf,
    limits: Limits,
    size: usize,
    /// `LP_NUM_THREADS` for each worker (none: inherited).
    threads: Option<usize>,
    book: Mutex<Book>,
    freed: Condvar,
    started: AtomicU32,
    restarts: Mutex<Restarts>,
}

/// A slot taken from the pool for one request; given back when dropped
/// (with its worker, or empty when the worker was retired).
struct Lease<'a> {
    pool: &'a Pool,
    proc: Option<Proc>,
    pid: Option<u32>,
}

impl Lease<'_> {
    /// Notes the worker serving this request (for [`Pool::pids`]).
    fn serving(&mut self, pid: u32) {
        if self.pid != Some(pid) {
            let mut book = self.pool.book();
            if let Some(old) = self.pid.take() {
                book.busy_pids.retain(|&p| p != old);
            }
            book.busy_pids.push(pid);
            self.pid = Some(pid);
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut book = self.pool.book();
        if let Some(pid) = self.pid {
            book.busy_pids.retain(|&p| p != pid);
        }
        book.busy -= 1;
        book.idle.push(self.proc.take());
        drop(book);
        self.pool.freed.notify_all();
    }
}

impl Pool {
    /// A pool of up to `workers` processes running `exe render-worker`
    /// (at least one). With more than one, each worker is given
    /// `LP_NUM_THREADS` = cores / workers ([`threads_per_worker`]) unless
    /// `LP_NUM_THREADS` is already set in this process's environment.
    pub fn new(exe: PathBuf, limits: Limits, workers: usize) -> Pool {
        let size = workers.max(1);
        let threads =
            if std::env::var_os("LP_NUM_THREADS").is_some() { None } else { threads_per_worker(size, cores()) };
        Pool {
            exe,
            limits,
            size,
            threads,
            book: Mutex::new(Book {
                idle: (0..size).map(|_| None).collect(),
                busy: 0,
                busy_pids: Vec::new(),
                queue: VecDeque::new(),
                next_ticket: 0,
            }),
            freed: Condvar::new(),
            started: AtomicU32::new(0),
            restarts: Mutex::new(Restarts::default()),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Workers this pool may run at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Requests being served now (at most [`Pool::size`]).
    pub fn busy(&self) -> usize {
        self.book().busy
    }

    /// Requests waiting for a worker now.
    pub fn waiting(&self) -> usize {
        self.book().queue.len()
    }

    /// Workers started so far.
    pub fn started(&self) -> u32 {
        self.started.load(Ordering::SeqCst)
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

    /// The process ids of the running workers: those serving a request,
    /// then the idle ones.
    pub fn pids(&self) -> Vec<u32> {
        let book = self.book();
        let idle = book.idle.iter().flatten().map(|p| p.child.id());
        book.busy_pids.iter().copied().chain(idle).collect()
    }

    /// A running worker's process id (the only one in a pool of one).
    pub fn pid(&self) -> Option<u32> {
        self.pids().first().copied()
    }

    /// Process ids of the workers serving a request now.
    pub fn busy_pids(&self) -> Vec<u32> {
        self.book().busy_pids.clone()
    }

    /// Waits for a free slot, first come first served, for at most
    /// [`Limits::timeout`] (RENDER_FAILED after that).
    fn acquire(&self) -> Result<Lease<'_>> {
        let mut book = self.book();
        let ticket = book.next_ticket;
        book.next_ticket += 1;
        book.queue.push_back(ticket);
        let deadline = Instant::now() + self.limits.timeout;
        loop {
            if book.queue.front() == Some(&ticket) && !book.idle.is_empty() {
                book.queue.pop_front();
                // A running worker before an unstarted slot.
                let at = book.idle.iter().position(Option::is_some).unwrap_or(0);
                let proc = book.idle.swap_remove(at);
                book.busy += 1;
                drop(book);
                // The next in line may find a slot too.
                self.freed.notify_all();
                return Ok(Lease { pool: self, proc, pid: None });
            }
            let now = Instant::now();
            if now >= deadline {
                book.queue.retain(|&t| t != ticket);
                drop(book);
                self.freed.notify_all();
                return Err(failed(format!(
                    "every render worker stayed busy for {} s; try again later",
                    self.limits.timeout.as_secs()
                )));
            }
            book = self.freed.wait_timeout(book, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    fn spawn(&self) -> Result<Proc> {
        let mut cmd = Command::new(&self.exe);
        cmd.arg("render-worker").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(n) = self.threads {
            cmd.env("LP_NUM_THREADS", n.to_string());
        }
        let mut child =
            cmd.spawn().map_err(|e| failed(format!("cannot start the render worker {}: {e}", self.exe.display())))?;
        self.started.fetch_add(1, Ordering::SeqCst);
        let stdin = BufWriter::new(child.stdin.take().ok_or_else(|| failed("the render worker has no stdin"))?);
        let stdout = BufReader::new(child.stdout.take().ok_or_else(|| failed("the render worker has no stdout"))?);
        Ok(Proc { child, stdin, stdout: Some(stdout), served: 0 })
    }

    /// Sends one request to a free worker and reads its answer; replaces
    /// the worker when it fails, times out or has served its share.
    fn call(&self, header: &Value, payload: &[u8]) -> Result<(Value, Vec<u8>)> {
        let mut lease = self.acquire()?;
        // A worker that died since its last answer is replaced before use.
        if lease.proc.as_mut().is_some_and(|p| !p.alive())
            && let Some(p) = lease.proc.take()
        {
            eprintln!("meshcheck: a render worker exited; starting another");
            self.retire(p, Retire::Exited);
        }
        if lease.proc.is_none() {
            lease.proc = Some(self.spawn()?);
        }
        let proc = lease.proc.as_mut().expect("a worker was just started");
        let pid = proc.child.id();
        lease.serving(pid);
        let proc = lease.proc.as_mut().expect("the lease holds a worker");
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
            && let Some(p) = lease.proc.take()
        {
            self.retire(p, why);
        }
        drop(lease);
        let (head, body) = outcome?;
        if head.get("ok").and_then(Value::as_bool) != Some(true) {
            return Err(error_from(&head));
        }
        Ok((head, body))
    }

    /// Draws the stills of `req` in a worker, and says which worker drew
    /// them and when.
    pub fn render_traced(&self, source: &Source, req: &Request) -> Result<(Rendered, AdapterInfo, Served)> {
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
        let served = served_from(&head)?;
        let (rendered, adapter) = decode_rendered(&head, body)?;
        Ok((rendered, adapter, served))
    }

    fn render(&self, source: &Source, req: &Request) -> Result<(Rendered, AdapterInfo)> {
        self.render_traced(source, req).map(|(r, a, _)| (r, a))
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
        // A lease borrows the pool, so every slot is back by now.
        for p in self.book().idle.drain(..).flatten() {
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
    // Read straight into a buffer of the announced size (no regrowth: the
    // stills of one request are 24 MB).
    let mut payload = vec![0u8; plen as usize];
    r.read_exact(&mut payload).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => bad("frame payload cut short"),
        _ => e,
    })?;
    Ok((header, payload))
}

/// Now, in milliseconds since the Unix epoch.
fn unix_ms() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn served_from(head: &Value) -> Result<Served> {
    let garbled = || failed("the render worker's answer is garbled (pid, span_ms)");
    let pid = head["pid"].as_u64().and_then(|p| u32::try_from(p).ok()).ok_or_else(garbled)?;
    let span = |i: usize| head["span_ms"].get(i).and_then(Value::as_f64).ok_or_else(garbled);
    Ok(Served { pid, started_ms: span(0)?, ended_ms: span(1)? })
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
        let started_ms = unix_ms();
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| handle(&header, payload)))
            .unwrap_or_else(|_| Err(Error::internal("the render worker panicked")));
        let (mut head, parts) = match answer {
            Ok(answer) => answer,
            Err(e) => (json!({"ok": false, "code": e.code, "message": e.message, "detail": e.detail}), Vec::new()),
        };
        // Which worker served the request, and when (Pool::render_traced).
        head["pid"] = json!(std::process::id());
        head["span_ms"] = json!([started_ms, unix_ms()]);
        let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
        let written = write_frame(&mut output, &head, &refs);
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
            bytes: payload.into(),
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
            Pool::new(PathBuf::from("/bin/false"), Limits { timeout: Duration::from_secs(20), ..Limits::default() }, 1);
        assert_eq!((pool.started(), pool.restarts()), (0, Restarts::default()));
        for _ in 0..2 {
            let e = pool.call(&json!({"op": "hello"}), &[]).unwrap_err();
            assert_eq!(e.code, ErrorCode::RenderFailed);
        }
        assert_eq!(pool.started(), 2);
        assert_eq!(pool.restarts(), Restarts { failed: 2, ..Restarts::default() });
        assert_eq!(pool.pid(), None, "no worker left running");
    }

    /// Callers waiting for a busy pool are served in the order they came,
    /// and a slot comes back when its lease ends.
    #[test]
    fn waiting_callers_are_served_first_come_first_served() {
        let limits = Limits { timeout: Duration::from_secs(60), ..Limits::default() };
        let pool = Arc::new(Pool::new(PathBuf::from("/nonexistent"), limits, 1));
        let held = pool.acquire().unwrap();
        assert_eq!((pool.busy(), pool.size()), (1, 1));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for i in 0..4 {
            let (mine, order) = (pool.clone(), order.clone());
            threads.push(std::thread::spawn(move || {
                let lease = mine.acquire().unwrap();
                order.lock().unwrap().push(i);
                std::thread::sleep(Duration::from_millis(5));
                drop(lease);
            }));
            // The next caller comes only once this one is queued.
            let t = Instant::now();
            while pool.waiting() < i + 1 && t.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(pool.waiting(), i + 1);
        }
        drop(held);
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2, 3]);
        assert_eq!((pool.busy(), pool.waiting()), (0, 0));
    }

    /// Two slots serve two callers at once; a third waits at most the
    /// timeout, then fails with RENDER_FAILED and leaves the queue.
    #[test]
    fn the_wait_for_a_worker_is_bounded() {
        let limits = Limits { timeout: Duration::from_millis(300), ..Limits::default() };
        let pool = Pool::new(PathBuf::from("/nonexistent"), limits, 2);
        let (a, b) = (pool.acquire().unwrap(), pool.acquire().unwrap());
        assert_eq!(pool.busy(), 2);
        let t = Instant::now();
        let e = pool.acquire().err().expect("no slot is free");
        assert!(t.elapsed() >= Duration::from_millis(300), "{:?}", t.elapsed());
        assert_eq!(e.code, ErrorCode::RenderFailed);
        assert!(e.message.contains("busy"), "{}", e.message);
        assert_eq!(pool.waiting(), 0);
        drop(a);
        let c = pool.acquire().unwrap();
        drop((b, c));
        assert_eq!(pool.busy(), 0);
    }

    #[test]
    fn workers_share_the_cores() {
        assert_eq!([1, 2, 3, 4, 16].map(default_workers), [1, 1, 1, 2, 8]);
        assert_eq!(threads_per_worker(1, 8), None, "one worker keeps llvmpipe's default");
        assert_eq!(threads_per_worker(2, 2), Some(1));
        assert_eq!(threads_per_worker(3, 8), Some(2));
        assert_eq!(threads_per_worker(4, 2), Some(1), "at least one thread each");
    }

    #[test]
    fn worker_errors_keep_their_code() {
        let e = error_from(&json!({"ok": false, "code": "MALFORMED_GLTF", "message": "bad", "detail": {"x": 1}}));
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::MalformedGltf, "bad"));
        assert_eq!(error_from(&json!({"ok": false})).code, ErrorCode::RenderFailed);
    }
}
