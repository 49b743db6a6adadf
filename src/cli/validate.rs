//! `meshcheck validate`: gather inputs, validate them in parallel, print.
//!
//! Folders are walked recursively for .glb, .gltf and .zip files and sorted
//! by path, so output order never depends on scheduling; `-j N` sets the
//! number of files validated at once (all cores by default).

use super::baseline::{self, Baseline};
pub use super::config::FailOn;
use super::config::{self, Plan, SettingFlags};
use super::html;
use super::output::{self, FileResult, Job};
use super::values::positive_seconds;
use super::{annotations, diag, findings, gitlab, markdown, sarif};
use crate::asset::Input;
use crate::engine::{self, Options};
use crate::error::{Error, Result};
use crate::report::{Mode, Verdict};
use clap::{Args, ValueEnum};
use rayon::prelude::*;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Output formats of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table per file, with a summary for folder runs (default on a terminal).
    Table,
    /// The report JSON, exactly as the service returns it (default otherwise).
    Json,
    /// JUnit XML: one testcase per check per file.
    Junit,
    /// SARIF 2.1.0: a rule per check, a result per finding (GitHub code scanning).
    Sarif,
    /// GitHub Actions workflow commands (annotations), and a job summary in
    /// $GITHUB_STEP_SUMMARY when it is set.
    Github,
    /// GitLab Code Quality JSON.
    Gitlab,
    /// Markdown for a pull-request comment: verdicts, measured vs threshold.
    Markdown,
    /// One self-contained HTML report card (a folder: an index and a card
    /// per file); in full mode with the stills inline.
    Html,
}

/// Arguments of `meshcheck validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Files (.glb, .gltf, .zip; the format is sniffed from the bytes) or
    /// folders (walked recursively for .glb, .gltf and .zip). `-` reads
    /// standard input.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format [default: table on a terminal, json otherwise].
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Also write one NAME.report.json per input into DIR (mirroring subfolders).
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// The settings: flags given here win over meshcheck.toml (docs/config.md).
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Findings recorded in FILE (by --write-baseline) are accepted: still
    /// reported and marked, they no longer fail the run; new ones do.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Record this run's findings in FILE as the accepted baseline (exit 0
    /// unless --baseline is given too).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Seconds the glTF-Validator may spend on one file before SPEC-001 is
    /// skipped with "validator timed out".
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS", value_parser = positive_seconds)]
    pub validator_timeout: f64,
    /// Files validated in parallel [default: all cores].
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// With --mode full: write the six standard stills next to the report
    /// (into --output-dir, or NAME-screenshots/ in the current directory) and
    /// list them under `screenshots`.
    #[arg(long)]
    pub screenshots: bool,
    /// With --mode full: stamp this text on the stills.
    #[arg(long, value_name = "TEXT")]
    pub watermark: Option<String>,
    /// With --format html and --mode full: also a turntable GIF per file;
    /// `--turntable='{"frames":36,"size":512}'` sets frames (8..120) and size
    /// (128..1024) [default: 36 frames of 256 px].
    #[arg(long, value_name = "JSON", num_args = 0..=1, require_equals = true,
          default_missing_value = r#"{"size":256}"#, value_parser = super::values::turntable_spec_boxed)]
    pub turntable: Option<Box<crate::report::TurntableSpec>>,
}

const EXTENSIONS: &[&str] = &["glb", "gltf", "zip"];

fn has_asset_extension(p: &Path) -> bool {
    p.extension().and_then(|e| e.to_str()).is_some_and(|e| EXTENSIONS.iter().any(|x| x.eq_ignore_ascii_case(e)))
}

/// Expands the command line's paths into jobs, sorted by path; a folder
/// contributes its .glb, .gltf and .zip files. Returns whether any path was a folder.
pub fn collect(paths: &[PathBuf]) -> Result<(Vec<Job>, bool)> {
    let mut jobs = Vec::new();
    let mut folder = false;
    for p in paths {
        if p.as_os_str() == "-" {
            jobs.push(Job { display: "-".into(), path: None, out_name: PathBuf::from("stdin") });
            continue;
        }
        let meta = std::fs::metadata(p).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", p.display())))?;
        if meta.is_dir() {
            folder = true;
            let mut found = Vec::new();
            walk(p, &mut found)?;
            found.sort();
            for f in found {
                let rel = f.strip_prefix(p).unwrap_or(&f).to_path_buf();
                jobs.push(Job { display: f.display().to_string(), path: Some(f), out_name: rel });
            }
        } else {
            let name = p.file_name().map(PathBuf::from).unwrap_or_else(|| p.clone());
            jobs.push(Job { display: p.display().to_string(), path: Some(p.clone()), out_name: name });
        }
    }
    jobs.sort_by(|a, b| a.display.cmp(&b.display));
    jobs.dedup_by(|a, b| a.display == b.display);
    Ok((jobs, folder))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| Error::bad_request(format!("cannot read folder {}: {e}", d.display())))?;
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else { continue };
            let path = entry.path();
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file() && has_asset_extension(&path) {
                out.push(path);
            }
        }
    }
    Ok(())
}

/// Resolves every job's settings and builds their options (each distinct
/// set once), then starts what they share: the validator pool and, in full
/// mode, the drawer (a worker process when more than one file is drawn).
/// `Plan::inputs` follows the order of `jobs`.
pub fn plan(args: &ValidateArgs, jobs: &[Job]) -> Result<Plan> {
    let inputs: Vec<Option<&Path>> = jobs.iter().map(|j| j.path.as_deref()).collect();
    let Plan { mut options, inputs: per_job } = config::Resolver::new(&args.settings)?.plan(&inputs)?;
    let shots = args.screenshots || args.watermark.is_some();
    if shots && !options.iter().any(|o| o.mode == Mode::Full) {
        return Err(Error::bad_request(
            "--screenshots and --watermark need --mode full (the renderer draws the stills)",
        ));
    }
    if !cfg!(feature = "render") && shots {
        return Err(Error::bad_request(
            "--screenshots and --watermark need the renderer, which is not in this build (the `render` feature)",
        ));
    }
    if options.iter().any(Options::runs_validator) {
        // One pool per run, started before any file is read so that a missing
        // Node or package is reported once, with the command that fixes it.
        // Node loads the validator while the files are read (`run` waits for
        // it only where a file needs it). One process for every two files
        // validated at once, each kept busy with the next file queued behind
        // the one it validates: the checks of those files run on the other
        // cores, and each process compiles the validator's code only once
        // (BENCHMARKS.md, "SPEC-001 overhead").
        let timeout = std::time::Duration::from_secs_f64(args.validator_timeout);
        let pool = std::sync::Arc::new(crate::validator::Validator::start(timeout)?);
        let validated = per_job.iter().filter(|(i, _)| options[*i].runs_validator()).count();
        let processes = validated.min(threads(args)).div_ceil(2).max(1);
        pool.limit(processes);
        pool.prestart(processes);
        options.iter_mut().for_each(|o| o.validator = Some(pool.clone()));
    }
    options.iter_mut().for_each(|o| o.watermark = args.watermark.clone());
    #[cfg(feature = "render")]
    {
        let drawn = per_job.iter().filter(|(i, _)| options[*i].renders()).count();
        if drawn > 0 {
            let drawer = if drawn > 1 { worker_drawer()? } else { crate::render::Drawer::Local };
            // Once per run, before any file: no adapter (here or in the worker)
            // is an environment error (exit 4).
            drawer.ready()?;
            options.iter_mut().for_each(|o| o.drawer = drawer.clone());
        }
    }
    Ok(Plan { options, inputs: per_job })
}

fn read_input(job: &Job) -> Result<Input> {
    match &job.path {
        Some(p) => Input::from_path(p).map_err(|e| Error::bad_request(format!("cannot read {}: {e}", p.display()))),
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| Error::bad_request(format!("cannot read standard input: {e}")))?;
            Ok(stdin_input(bytes))
        }
    }
}

/// Standard input's bytes as an input; its resources are read from the current directory.
fn stdin_input(bytes: Vec<u8>) -> Input {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    Input { filename: "-".into(), bytes: bytes.into(), resolver: Box::new(crate::asset::bundle::DirResolver::new(cwd)) }
}

/// Validates one job. With `shots_dir` (full mode, `--screenshots`), the
/// standard stills are written into `shots_dir/NAME-screenshots/` and listed
/// in the report.
pub fn validate_job(job: &Job, opts: &Options, shots_dir: Option<&Path>) -> FileResult {
    validate_job_for_card(job, opts, shots_dir, None).0
}

/// [`validate_job`], and with `card` (`--format html`) the pictures of the
/// file's report card: the stills a full-mode run drew and, when `card`
/// holds a turntable request, its GIF (the input read a second time).
pub fn validate_job_for_card(
    job: &Job,
    opts: &Options,
    shots_dir: Option<&Path>,
    card: Option<&Option<crate::report::TurntableSpec>>,
) -> (FileResult, Option<html::Visuals>) {
    let mut visuals = None;
    let result = read_input(job).and_then(|input| {
        // Standard input cannot be read twice: its bytes are kept for the turntable.
        let kept = (card.is_some_and(Option::is_some) && job.path.is_none()).then(|| input.bytes.to_vec());
        // A file on disk is read by the validator itself, not piped to it.
        let (mut report, stills) = match &job.path {
            Some(path) => engine::validate_file_with_stills(input, path, opts)?,
            None => engine::validate_with_stills(input, opts)?,
        };
        if let Some(rendered) = stills {
            if let Some(base) = shots_dir {
                report.screenshots = Some(write_stills(base, job, &rendered)?);
            }
            if let Some(turntable) = card {
                visuals = Some(card_visuals(job, opts, &rendered, turntable.as_ref(), kept)?);
            }
        }
        Ok(report)
    });
    (FileResult { job: job.clone(), result }, visuals)
}

#[cfg(not(feature = "render"))]
fn card_visuals(
    _: &Job,
    _: &Options,
    rendered: &engine::Rendered,
    _: Option<&crate::report::TurntableSpec>,
    _: Option<Vec<u8>>,
) -> Result<html::Visuals> {
    match *rendered {}
}

#[cfg(feature = "render")]
fn card_visuals(
    job: &Job,
    opts: &Options,
    rendered: &engine::Rendered,
    turntable: Option<&crate::report::TurntableSpec>,
    kept: Option<Vec<u8>>,
) -> Result<html::Visuals> {
    let turntable = match turntable {
        None => None,
        Some(spec) => {
            let input = match kept {
                Some(bytes) => stdin_input(bytes),
                None => read_input(job)?,
            };
            Some(engine::turntable(input, spec, &opts.drawer)?)
        }
    };
    Ok(html::Visuals { stills: html::card_stills(rendered), turntable })
}

#[cfg(not(feature = "render"))]
fn write_stills(_: &Path, _: &Job, rendered: &engine::Rendered) -> Result<Vec<crate::report::Screenshot>> {
    match *rendered {}
}

#[cfg(feature = "render")]
fn write_stills(base: &Path, job: &Job, rendered: &engine::Rendered) -> Result<Vec<crate::report::Screenshot>> {
    let stem = job.out_name.file_stem().and_then(|s| s.to_str()).unwrap_or("stdin");
    let dir = base.join(job.out_name.parent().unwrap_or(Path::new(""))).join(format!("{stem}-screenshots"));
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::bad_request(format!("cannot create the folder {}: {e}", dir.display())))?;
    let mut out = Vec::new();
    for (i, still) in rendered.stills.iter().enumerate() {
        let mut shot = still.screenshot(i);
        let path = dir.join(format!("{}.png", shot.name));
        std::fs::write(&path, crate::render::image_out::png(&still.image))
            .map_err(|e| Error::bad_request(format!("cannot write {}: {e}", path.display())))?;
        shot.path = Some(path.display().to_string());
        out.push(shot);
    }
    Ok(out)
}

/// When a full-mode run renders more than one file, the stills are drawn in
/// a worker process (`meshcheck render-worker`, as `meshcheck serve` draws
/// them) replaced after [`CLI_WORKER_RENDERS`] files or once it holds
/// [`CLI_WORKER_RSS`]: Mesa's lavapipe keeps memory for every render pass and
/// never gives it back, so one process drawing a whole folder grows with it
/// (16 copies of FlightHelmet: 1.2 GB in process; docs/architecture.md).
/// Files drawn at once (the run's threads) draw in separate workers, as
/// many as `meshcheck serve` runs by default ([`default_workers`]).
///
/// [`default_workers`]: crate::render::worker::default_workers
#[cfg(feature = "render")]
fn worker_drawer() -> Result<crate::render::Drawer> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::internal(format!("cannot find the meshcheck executable for the render worker: {e}")))?;
    let limits = crate::render::worker::Limits {
        renders: CLI_WORKER_RENDERS,
        rss_bytes: CLI_WORKER_RSS,
        ..crate::render::worker::Limits::default()
    };
    let workers = crate::render::worker::default_workers(crate::render::worker::cores());
    let pool = crate::render::worker::Pool::new(exe, limits, workers);
    Ok(crate::render::Drawer::Worker(std::sync::Arc::new(pool)))
}

/// Files a CLI render worker draws before it is replaced.
#[cfg(feature = "render")]
pub const CLI_WORKER_RENDERS: u32 = 8;
/// Resident memory after which a CLI render worker is replaced.
#[cfg(feature = "render")]
pub const CLI_WORKER_RSS: u64 = 320 << 20;

/// The exit code for one outcome.
pub fn exit_code(outcome: &FileResult, fail_on: FailOn) -> i32 {
    match &outcome.result {
        Ok(r) => match (r.verdict, fail_on) {
            (Verdict::Fail, _) | (Verdict::Warn, FailOn::Warn) => 1,
            _ => 0,
        },
        Err(e) => e.code.exit_code(),
    }
}

/// `--format html`: the card's turntable request (`Some(None)`: stills
/// only); `None` for other formats. `--turntable` needs the card, full mode
/// and the renderer.
fn card_request(
    args: &ValidateArgs,
    format: Format,
    plan: &Plan,
) -> Result<Option<Option<crate::report::TurntableSpec>>> {
    if args.turntable.is_some() {
        if format != Format::Html || !plan.options.iter().any(|o| o.mode == Mode::Full) {
            return Err(Error::bad_request("--turntable needs --format html and --mode full"));
        }
        if !cfg!(feature = "render") {
            return Err(Error::bad_request(
                "--turntable needs the renderer, which is not in this build (the `render` feature)",
            ));
        }
        #[cfg(feature = "render")]
        engine::RenderJob {
            request: crate::render::Request::standard(128),
            turntable: args.turntable.as_deref().cloned(),
        }
        .check()?;
    }
    Ok((format == Format::Html).then(|| args.turntable.as_deref().cloned()))
}

/// Files validated at once: `-j`, or every core.
fn threads(args: &ValidateArgs) -> usize {
    args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1)
}

/// The largest file whose validation a folder run begins ahead of its turn:
/// the largest whose bytes the engine holds for the validator
/// ([`engine::HELD_MAX_BYTES`]), since a validation begun ahead holds them.
pub const AHEAD_MAX_BYTES: u64 = engine::HELD_MAX_BYTES as u64;

/// Files past its own whose validation a worker begins as it starts one:
/// the next of any size up to [`AHEAD_MAX_BYTES`], the three after it when
/// they are small ([`AHEAD_DEEP_MAX_BYTES`]). With one file ahead a worker,
/// Node's queue of small files ran dry between them: Node woke for each
/// file, and a folder of 1,000 small files took 1.37 s against 1.23 s with
/// four ahead (median of 8 interleaved runs; Node's CPU 2.35 -> 2.18 s in
/// all, BENCHMARKS.md "Ninth step").
const AHEAD_FILES: usize = 4;

/// The largest file begun more than one file ahead: small files are where
/// Node's queue runs dry, and each file begun ahead holds its bytes.
pub const AHEAD_DEEP_MAX_BYTES: u64 = 1 << 20;

/// The jobs a worker begins ahead as it starts job `k` of `jobs`, each with
/// the largest file it begins at that distance.
fn ahead_of(k: usize, jobs: usize) -> impl Iterator<Item = (usize, u64)> {
    (k + 1..=k + AHEAD_FILES)
        .take_while(move |&a| a < jobs)
        .map(move |a| (a, if a == k + 1 { AHEAD_MAX_BYTES } else { AHEAD_DEEP_MAX_BYTES }))
}

/// Begins the reference validator's work on `job` before a worker takes it
/// (`Validator::begin_ahead`): each worker begins the files after its own
/// ([`AHEAD_FILES`]) as it starts one, so Node always has files queued
/// while the workers check theirs. Only a GLB or .gltf on disk of at most
/// `max_bytes` that opens cleanly, once (`begun`); everything else waits
/// for its turn. The request is the one the engine makes (`asset::open`,
/// its main name, bytes and resolver), and the engine takes the outcome
/// only when its own request is the same.
fn begin_ahead(job: &Job, opts: &Options, begun: &AtomicBool, max_bytes: u64) {
    let (Some(v), Some(path)) = (&opts.validator, &job.path) else { return };
    // Each file is looked at by up to four workers' starts: once begun,
    // not again (no file system call).
    if !opts.runs_validator() || begun.load(Ordering::SeqCst) {
        return;
    }
    // Too large for this distance: left for a later, nearer look (or its turn).
    if std::fs::metadata(path).map_or(true, |m| m.len() > max_bytes) {
        return;
    }
    if begun.swap(true, Ordering::SeqCst) {
        return;
    }
    let Ok(input) = Input::from_path(path) else { return };
    if crate::asset::sniff(&input.bytes).is_err() {
        return;
    }
    let Ok(opened) = crate::asset::open(input) else { return };
    if opened.info.main_file.is_some() {
        // A zip's main file exists only in memory: validated in its turn.
        return;
    }
    let uri = opened.main_name();
    // The bytes move into the validator's hold as they are: no copy (a
    // shared slice, `Arc<[u8]>`, was a second allocation of the file).
    v.begin_ahead(uri, path.clone(), std::sync::Arc::new(opened.main), opened.resolver);
}

/// How much lower than the rest of the process the checks' workers run
/// when the reference validator runs beside them (a nice value: weight 110
/// against Node's 1024 on a shared core).
pub const WORKER_NICENESS: i32 = 10;

/// Lowers the calling thread's scheduling priority by [`WORKER_NICENESS`]
/// (at most to 19). The Khronos validator is one Node process working
/// through its queue of files on one core; meshcheck's checks are spread
/// over every core. When the workers compete with Node on equal terms, the
/// kernel shares a core between Node and a worker and the validator, the
/// longest serial part of the run, stretches by up to half; at a lower
/// priority the workers take what Node leaves. No work is lost either way
/// (a core idle of Node runs the workers at full speed). Linux applies
/// `PRIO_PROCESS` with `who` 0 to the calling thread only; threads a worker
/// starts inherit the value. Failure (not Linux, a sandbox) leaves the
/// priority as it was.
fn yield_to_validator() {
    #[cfg(target_os = "linux")]
    // SAFETY: getpriority and setpriority read and set a scheduling value of
    // the calling thread; no memory is involved. errno is cleared first
    // because -1 is also a valid nice value.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, 0);
        if now == -1 && *libc::__errno_location() != 0 {
            return;
        }
        let _ = libc::setpriority(libc::PRIO_PROCESS, 0, (now + WORKER_NICENESS).min(19));
    }
}

/// Runs `meshcheck validate`.
pub fn run(args: ValidateArgs) -> Result<i32> {
    let accepted = args.baseline.as_deref().map(|p| Baseline::read(p).map(|b| (p, b))).transpose()?;
    let (jobs, folder) = collect(&args.paths)?;
    if jobs.is_empty() {
        return Err(Error::bad_request("no .glb, .gltf or .zip files were found under the given paths"));
    }
    if jobs.iter().filter(|j| j.path.is_none()).count() > 1 {
        return Err(Error::bad_request("`-` (standard input) may be given once"));
    }
    let plan = plan(&args, &jobs)?;
    let shots_dir: Option<PathBuf> =
        args.screenshots.then(|| args.output_dir.clone().unwrap_or_else(|| PathBuf::from(".")));
    let stdout_tty = std::io::stdout().is_terminal();
    let format = args.format.unwrap_or(if stdout_tty { Format::Table } else { Format::Json });
    let card = card_request(&args, format, &plan)?;
    let threads = threads(&args);
    // With the reference validator on, the checks' workers yield to it
    // (see `yield_to_validator`).
    let yields = plan.options.iter().any(|o| o.validator.is_some());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(move |_| {
            if yields {
                yield_to_validator();
            }
        })
        .build()
        .map_err(|e| Error::new(crate::error::ErrorCode::Internal, format!("cannot start worker threads: {e}")))?;
    let show_progress = jobs.len() > 1 && std::io::stderr().is_terminal();
    let bar = show_progress.then(|| {
        let bar = indicatif::ProgressBar::new(jobs.len() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let single = jobs.len() == 1 && !folder;
    // One small file: its peak is the run's (engine::lean_heap_for_one_input).
    if single && let Some(size) = jobs[0].path.as_deref().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len()) {
        crate::engine::lean_heap_for_one_input(size);
    }
    // Whether a job's validation was begun (ahead of it, or by the job itself).
    let begun: Vec<AtomicBool> = jobs.iter().map(|_| AtomicBool::new(false)).collect();
    let outcomes = pool.install(|| {
        jobs.par_iter()
            .zip(&plan.inputs)
            .enumerate()
            .map(|(k, (job, (i, _)))| {
                begun[k].store(true, Ordering::SeqCst);
                for (a, max) in ahead_of(k, jobs.len()) {
                    if let Some((n, _)) = plan.inputs.get(a) {
                        begin_ahead(&jobs[a], &plan.options[*n], &begun[a], max);
                    }
                }
                let (o, visuals) = validate_job_for_card(job, &plan.options[*i], shots_dir.as_deref(), card.as_ref());
                // JSON is rendered by the worker that checked the file, beside
                // the files still being checked, not in one pass at the end.
                let json = (format == Format::Json).then(|| output::json_entry(&o, single));
                if let Some(b) = &bar {
                    b.set_message(job.display.clone());
                    b.inc(1);
                }
                (o, (visuals, json))
            })
            .collect::<Vec<_>>()
    });
    let mut visuals: Vec<Option<html::Visuals>> = Vec::with_capacity(outcomes.len());
    let mut json: Vec<Option<String>> = Vec::with_capacity(outcomes.len());
    let outcomes: Vec<FileResult> = outcomes
        .into_iter()
        .map(|(o, (v, j))| {
            visuals.push(v);
            json.push(j);
            o
        })
        .collect();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    // A validator that could not be loaded is one environment error (exit
    // 4) for the run, not one per file.
    if let Some(v) = plan.options.iter().find_map(|o| o.validator.as_ref()) {
        v.ready()?;
    }
    for o in &outcomes {
        if let Err(e) = &o.result {
            diag::print_error(e, Some(&o.job.display));
        }
    }
    if let Some(dir) = &args.output_dir {
        output::write_reports(dir, &outcomes)?;
    }
    // Findings (what SARIF, the annotations, Markdown and the table list,
    // and what a baseline is matched on) are made the first time something
    // reads them: a JSON run of a thousand files does not build and drop them.
    let found = std::cell::LazyCell::new(|| {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        let mut found = findings::Run::new(&outcomes, &cwd);
        if let Some((path, b)) = &accepted {
            baseline::apply(&mut found, b, &path.display().to_string());
        }
        found
    });
    if let Some(path) = &args.write_baseline {
        Baseline::of(&found.findings).write(path)?;
    }
    let text = match format {
        Format::Json => {
            // Written part by part, each rendered by its worker.
            output::emit_json_joined(&json.into_iter().flatten().collect::<Vec<_>>(), single);
            None
        }
        Format::Junit => Some(output::junit(&outcomes)),
        Format::Table => {
            let mut t = output::table_marked(&outcomes, diag::colour_on(stdout_tty), &found.accepted_rules());
            if let Some(name) = &found.baseline {
                let (accepted, new) = found.baseline_counts();
                t.push_str(&format!("Baseline {name}: {accepted} findings accepted, {new} new\n"));
            }
            Some(t)
        }
        Format::Sarif => Some(sarif::sarif(&found)),
        Format::Github => {
            append_job_summary(&found)?;
            Some(annotations::github(&found))
        }
        Format::Gitlab => Some(gitlab::gitlab(&found)),
        Format::Markdown => Some(markdown::markdown(&found)),
        Format::Html => Some(html::report_card(&outcomes, &visuals, single)),
    };
    if let Some(text) = text {
        output::emit(&text);
    }
    // Each file is judged by its own fail_on (meshcheck.toml may set it per path).
    let warn_fails: Vec<bool> = plan.inputs.iter().map(|(_, fail_on)| *fail_on == FailOn::Warn).collect();
    let code = if accepted.is_some() {
        // Findings matched against the baseline (`baseline::apply`).
        baseline::exit_code(&found, &warn_fails)
    } else if args.write_baseline.is_some() {
        // Writing a baseline accepts everything it records.
        0
    } else {
        outcomes.iter().zip(&plan.inputs).map(|(o, (_, fail_on))| exit_code(o, *fail_on)).max().unwrap_or(0)
    };
    // The process exits next: the reports are left to it rather than freed
    // one map at a time (tens of milliseconds for a folder of a thousand).
    std::mem::forget(found);
    std::mem::forget(outcomes);
    Ok(code)
}

/// With `--format github` in a GitHub Actions job: appends the Markdown job
/// summary to the file `$GITHUB_STEP_SUMMARY` names, when it is set.
fn append_job_summary(run: &findings::Run<'_>) -> Result<()> {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else { return Ok(()) };
    let path = PathBuf::from(path);
    let fail = |e: std::io::Error| Error::bad_request(format!("cannot write the job summary {}: {e}", path.display()));
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).map_err(fail)?;
    std::io::Write::write_all(&mut file, markdown::job_summary(run).as_bytes()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's nice value.
    #[cfg(target_os = "linux")]
    fn nice() -> i32 {
        // SAFETY: reads a scheduling value of the calling thread.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
    }

    #[test]
    fn a_worker_begins_the_next_file_and_three_small_ones_after_it() {
        let plan: Vec<(usize, u64)> = ahead_of(10, 100).collect();
        assert_eq!(
            plan,
            [(11, AHEAD_MAX_BYTES), (12, AHEAD_DEEP_MAX_BYTES), (13, AHEAD_DEEP_MAX_BYTES), (14, AHEAD_DEEP_MAX_BYTES)]
        );
        const { assert!(AHEAD_DEEP_MAX_BYTES < AHEAD_MAX_BYTES) };
        // Near the end of the list, only the jobs there are.
        assert_eq!(ahead_of(97, 100).map(|(a, _)| a).collect::<Vec<_>>(), [98, 99]);
        assert_eq!(ahead_of(99, 100).count(), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_yielding_thread_runs_niced_below_the_rest() {
        let before = nice();
        let after = std::thread::spawn(|| {
            yield_to_validator();
            nice()
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + WORKER_NICENESS).min(19));
        // Per thread: the caller's own value is as it was.
        assert_eq!(nice(), before);
    }
}
