//! The engine: bytes plus options in, a [`Report`] (or a typed error) out.
//!
//! Neither the CLI nor the service adds anything to a report: both call
//! [`validate`]. Checks run in catalog order; one that panics is caught and
//! reported `skipped` with the reason, never taking the report down.

use crate::asset::{self, Asset, Input};
use crate::checks::catalog::{self, CATALOG};
use crate::checks::{CheckDef, CheckOutput, Comparison, Ctx};
use crate::error::{Error, ErrorCode, Result};
use crate::profile::Profile;
use crate::report::{self, CheckResult, EngineInfo, Mode, ProfileInfo, Report, Severity, Stats, Status};
use crate::validator::{self, Main, MainBytes, Validator};
#[cfg(feature = "vision")]
use crate::vision;
use rayon::prelude::*;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Which checks run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// When set, only these IDs run.
    pub only: Option<BTreeSet<&'static str>>,
    /// These IDs do not run.
    pub skip: BTreeSet<&'static str>,
}

impl Selection {
    /// Parses `--only` and `--skip` lists of IDs, family prefixes or category names.
    pub fn parse(only: &[String], skip: &[String]) -> Result<Selection> {
        let resolve = |items: &[String]| -> Result<BTreeSet<&'static str>> {
            let mut out = BTreeSet::new();
            for item in items.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
                let ids = catalog::select(item).ok_or_else(|| {
                    let fams: Vec<&str> =
                        catalog::FAMILIES.iter().filter(|f| !f.checks.is_empty()).map(|f| f.prefix).collect();
                    Error::bad_request(format!(
                        "unknown check or family `{item}`; valid checks: {}; families: {}",
                        catalog::ids().join(", "),
                        fams.join(", ")
                    ))
                })?;
                out.extend(ids);
            }
            Ok(out)
        };
        let only = if only.is_empty() { None } else { Some(resolve(only)?) };
        Ok(Selection { only, skip: resolve(skip)? })
    }

    /// Whether `id` runs.
    pub fn runs(&self, id: &str) -> bool {
        self.only.as_ref().is_none_or(|o| o.contains(id)) && !self.skip.contains(id)
    }
}

/// Everything besides the bytes that decides a report.
#[derive(Debug, Clone)]
pub struct Options {
    /// Budgets (after overrides and weld tolerance).
    pub profile: Profile,
    /// checks_only or full.
    pub mode: Mode,
    /// Which checks run.
    pub selection: Selection,
    /// The validator pool for SPEC-001; `None` uses the process-wide pool
    /// ([`Validator::global`]), started on first use.
    pub validator: Option<Arc<Validator>>,
    /// Full mode: text stamped on the stills (demo mode).
    pub watermark: Option<String>,
    /// Full mode: where the stills are drawn (this process, or a
    /// replaceable worker process).
    #[cfg(feature = "render")]
    pub drawer: crate::render::Drawer,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            profile: catalog::default_profile(),
            mode: Mode::ChecksOnly,
            selection: Selection::default(),
            validator: None,
            watermark: None,
            #[cfg(feature = "render")]
            drawer: Default::default(),
        }
    }
}

impl Options {
    /// Whether a selected check needs the reference validator's outcome.
    pub fn runs_validator(&self) -> bool {
        CATALOG.iter().any(|c| c.needs.validator && self.selection.runs(c.id))
    }

    /// The validator the checks that need it will use, when one runs: an
    /// environment error (with the command that fixes it) when Node or the
    /// package is missing.
    pub fn spec_validator(&self) -> Result<Option<Arc<Validator>>> {
        if !self.runs_validator() {
            return Ok(None);
        }
        match &self.validator {
            Some(v) => Ok(Some(v.clone())),
            None => Validator::global().map(Some),
        }
    }
}

pub use crate::checks::RenderRun;
/// The standard views a full-mode run drew.
#[cfg(feature = "render")]
pub use crate::render::Rendered;
/// Without the `render` feature nothing is ever drawn.
#[cfg(not(feature = "render"))]
pub type Rendered = std::convert::Infallible;
pub use crate::validator::SpecRun;

impl Options {
    /// Whether this run draws the standard views: full mode with an RND
    /// check selected, in a build with the renderer.
    pub fn renders(&self) -> bool {
        cfg!(feature = "render")
            && self.mode == Mode::Full
            && CATALOG.iter().any(|c| c.needs.renderer && self.selection.runs(c.id))
    }
}

/// Engine name and version as written into reports.
pub fn engine_info() -> EngineInfo {
    EngineInfo { name: "meshcheck".into(), version: env!("CARGO_PKG_VERSION").into() }
}

/// Validates one input.
pub fn validate(input: Input, opts: &Options) -> Result<Report> {
    validate_with_stills(input, opts).map(|(report, _)| report)
}

/// Validates one input and, in full mode, also returns the standard views
/// the RND checks measured (the caller writes or stores them as
/// `screenshots`). No graphics adapter is RENDER_FAILED (exit 4) before any
/// work; an asset the device refuses fails RND-001 instead.
pub fn validate_with_stills(input: Input, opts: &Options) -> Result<(Report, Option<Rendered>)> {
    validate_gated(input, opts, &|| Ok(()))
}

/// [`validate_with_stills`] with a gate called once the input has loaded,
/// before any check or render runs: every error the input alone decides
/// (format, container, JSON, buffers, bundle) has been raised by then. The
/// service charges credits in the gate; its error (INSUFFICIENT_CREDITS) is
/// returned as is and nothing is measured.
pub fn validate_gated(
    input: Input,
    opts: &Options,
    gate: &(dyn Fn() -> Result<()> + Sync),
) -> Result<(Report, Option<Rendered>)> {
    validate_source(input, Origin::Memory, opts, gate)
}

/// [`validate_with_stills`] of an input read from `path`, a plain file on
/// disk (as [`Input::from_path`] reads it): SPEC-001's validator reads the
/// file itself instead of taking its bytes through a pipe, so the findings
/// are the same. Up to [`HELD_MAX_BYTES`] the bytes are held for it, and
/// piped after all should the file change in size in between; a larger
/// file is validated as a stored one ([`validate_stored_with_stills`]): its
/// bytes are freed once loaded, and should Node not read it as announced it
/// is read again, SPEC-001 skipping with the reason if it is gone or has
/// another size.
pub fn validate_file_with_stills(input: Input, path: &Path, opts: &Options) -> Result<(Report, Option<Rendered>)> {
    validate_source(input, Origin::File(path), opts, &|| Ok(()))
}

/// [`validate_with_stills`] of an input whose bytes are also the file at
/// `path`, one that does not change while it is validated (the service's
/// stored blob): SPEC-001's validator reads the file itself, and the bytes
/// are freed once loaded, as they are when SPEC-001 does not run, rather
/// than held for the validator. Should Node fail to read the file, the
/// validator reads it again for Node ([`validator::MainBytes::OnDisk`]).
pub fn validate_stored_with_stills(input: Input, path: &Path, opts: &Options) -> Result<(Report, Option<Rendered>)> {
    validate_source(input, Origin::Stored(path), opts, &|| Ok(()))
}

/// The largest plain file whose bytes are held for SPEC-001's validator
/// while the checks run ([`validate_file_with_stills`]). Past it, holding
/// them would add the file's whole size to the peak (the CLI on the 32 MB
/// sphere of `cargo bench --bench scale`: 115-123 MB held, 86-92 MB not) to
/// guard against a file edited during its own validation; below it the
/// bytes cost little and a folder run begins validations ahead with them.
/// Inputs past it also get [`steady_large_blocks`] and, once done,
/// `release_free_memory`.
pub const HELD_MAX_BYTES: usize = 16 << 20;

/// Where an input's bytes came from.
#[derive(Debug, Clone, Copy)]
enum Origin<'a> {
    /// Memory only.
    Memory,
    /// A plain file that could change: the bytes are held for the validator.
    File(&'a Path),
    /// A file that does not change while validated: the bytes are not held.
    Stored(&'a Path),
}

impl<'a> Origin<'a> {
    fn path(self) -> Option<&'a Path> {
        match self {
            Origin::Memory => None,
            Origin::File(p) | Origin::Stored(p) => Some(p),
        }
    }
}

fn validate_source(
    input: Input,
    origin: Origin<'_>,
    opts: &Options,
    gate: &(dyn Fn() -> Result<()> + Sync),
) -> Result<(Report, Option<Rendered>)> {
    // A large input's arrays in mappings of their own, and what it freed
    // handed back once it is done, so that it is not the floor under the
    // next input's peak (a folder run, the service's next job). Small
    // inputs keep glibc's defaults, faster there, and skip the hand-back
    // (malloc_trim walks every free block: milliseconds on a busy heap).
    let large = input.bytes.len() > HELD_MAX_BYTES;
    if large {
        steady_large_blocks();
    }
    let out = validate_loaded(input, origin, opts, gate, large);
    if large || HAND_BACK_EVERY_INPUT.load(std::sync::atomic::Ordering::Relaxed) {
        release_free_memory();
    } else {
        // Only the block the allocator keeps (a no-op until a large
        // input): malloc_trim walks every free block.
        crate::memory::release_cached();
    }
    out
}

/// [`validate_source`], `large` when the input is over [`HELD_MAX_BYTES`].
fn validate_loaded(
    input: Input,
    origin: Origin<'_>,
    opts: &Options,
    gate: &(dyn Fn() -> Result<()> + Sync),
    large: bool,
) -> Result<(Report, Option<Rendered>)> {
    let renders = opts.renders();
    #[cfg(feature = "render")]
    if renders {
        opts.drawer.ready()?;
    }
    let validator = opts.spec_validator()?;
    // A large plain file is not held for the validator (see HELD_MAX_BYTES).
    let origin = match origin {
        Origin::File(path) if large => Origin::Stored(path),
        origin => origin,
    };
    if let Some(e) = validator.as_ref().and_then(|v| v.failed()) {
        // The validator could not be loaded: an environment error, for every file.
        return Err(e);
    }
    if let Err(e) = asset::sniff(&input.bytes) {
        // Not a container meshcheck reads; the validator may still say why.
        let main = Main { bytes: MainBytes::Held(&input.bytes), path: origin.path() };
        let spec = validator.as_ref().map(|v| v.validate_main(&input.filename, main, &asset::bundle::NoResources));
        if let Some(v) = &validator {
            v.ready()?;
        }
        return Err(with_validator_messages(e, spec.as_ref()));
    }
    #[cfg(feature = "render")]
    let source = if renders { crate::render::Source::for_drawer(&opts.drawer, &input) } else { Default::default() };
    let opened = asset::open(input)?;
    // Decoded textures are for the local device; a worker decodes its own.
    #[cfg(feature = "render")]
    let local = matches!(opts.drawer, crate::render::Drawer::Local);
    #[cfg(not(feature = "render"))]
    let local = false;
    let load_options = asset::LoadOptions { keep_images: renders && local };
    // After the load: the gate, the stills and the checks.
    let measure = |mut a: Asset| {
        gate()?;
        #[cfg(feature = "render")]
        let render = renders.then(|| {
            let mut req = crate::render::Request::standard(crate::render::DEFAULT_SIZE);
            req.watermark = opts.watermark.clone();
            opts.drawer.render(&source, &a, &req).map(|(r, _)| r).map_err(|e| e.message)
        });
        #[cfg(not(feature = "render"))]
        let render: Option<RenderRun> = None;
        let checks = run_checks_freeing(&mut a, opts, None, render.as_ref());
        Ok((a, checks, render))
    };
    let load = |opened: &asset::Opened| timed(|| "load".into(), || asset::load_opened_with(opened, load_options));
    let joined = |spec: std::thread::Result<SpecRun>| {
        spec.unwrap_or_else(|_| Err(validator::Failure::Crashed("the validator thread panicked".into())))
    };
    // A zip's main file exists only in memory; a GLB or .gltf is the file itself.
    let origin = if opened.info.main_file.is_none() { origin } else { Origin::Memory };
    let (loaded, spec) = match (validator.as_ref(), origin) {
        // The validator reads a stored file itself: nothing reads the bytes
        // after the load, so they are freed as they are without it.
        (Some(v), Origin::Stored(path)) => {
            let name = opened.main_name();
            let main = Main { bytes: MainBytes::OnDisk(opened.main.len() as u64), path: Some(path) };
            let resolver = opened.resolver.clone();
            std::thread::scope(|s| {
                let handle = s.spawn(move || v.validate_main(&name, main, resolver.as_ref()));
                let loaded = load(&opened);
                drop(opened);
                let loaded = loaded.and_then(measure);
                (loaded, Some(joined(handle.join())))
            })
        }
        // Its validation was begun ahead (a folder run's next files): Node
        // is at it already, and its outcome is taken after the checks, on
        // this thread, rather than waited for on a thread of its own.
        (Some(v), origin) if origin.path().is_some_and(|p| v.begun_ahead(p)) => {
            let name = opened.main_name();
            let loaded = load(&opened);
            // Held only in case Node cannot read the file as announced:
            // not resident while the checks run (`Bytes::release_resident`).
            opened.main.release_resident();
            let loaded = loaded.and_then(measure);
            let main = Main { bytes: MainBytes::Held(&opened.main), path: origin.path() };
            let spec = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                v.validate_main(&name, main, opened.resolver.as_ref())
            }));
            (loaded, Some(joined(spec)))
        }
        // The reference validator runs beside the loader, the renderer and the checks.
        (Some(v), _) => std::thread::scope(|s| {
            let name = opened.main_name();
            let opened = &opened;
            let main = Main { bytes: MainBytes::Held(&opened.main), path: origin.path() };
            let handle = s.spawn(move || v.validate_main(&name, main, opened.resolver.as_ref()));
            let loaded = load(opened);
            // A mapped file's pages, held for the validator, leave the
            // checks' peak (`Bytes::release_resident`); Node reads the file
            // by its path, and should it read the held bytes instead they
            // are faulted back in, the same bytes.
            opened.main.release_resident();
            let loaded = loaded.and_then(measure);
            (loaded, Some(joined(handle.join())))
        }),
        // Without it, nothing reads the input's bytes after the load (the
        // asset keeps what the checks measure): they are freed before the
        // checks build their own arrays, which lowers the peak by the input's size.
        (None, _) => {
            let loaded = load(&opened);
            drop(opened);
            (loaded.and_then(measure), None)
        }
    };
    if let Some(v) = &validator {
        v.ready()?;
    }
    let (asset, mut checks, render) = match loaded {
        Ok(x) => x,
        Err(e) => return Err(with_validator_messages(e, spec.as_ref())),
    };
    // The checks that read the validator's outcome run again with it (they
    // ran without it, skipped, while it was still working).
    for (idx, def) in CATALOG.iter().enumerate().filter(|(_, c)| c.needs.validator) {
        checks[idx] = run_check(def, &asset, opts, spec.as_ref(), render.as_ref());
    }
    let report = assemble(&asset, opts, checks, validator.map(|v| v.info()));
    free_checked(asset);
    #[cfg(feature = "render")]
    let drawn = render.and_then(|r| r.ok());
    #[cfg(not(feature = "render"))]
    let drawn = render.map(|never| match never {});
    Ok((report, drawn))
}

/// Frees a checked asset, its welded world mesh in two halves side by
/// side ([`crate::asset::scene::WorldMesh::free_in_halves`]): at a large
/// mesh's end the mesh is most of what the process holds, and freeing it
/// on one thread took s13 4-6 ms with the other core idle.
fn free_checked(mut asset: Asset) {
    if let Some(Ok(world)) = asset.scene.world.take() {
        world.free_in_halves();
    }
}

/// MALFORMED_GLTF (and UNSUPPORTED_FORMAT) carry the validator's errors and
/// warnings in `detail`, so the user learns why the document could not be read.
fn with_validator_messages(mut e: Error, spec: Option<&SpecRun>) -> Error {
    let Some(Ok(outcome)) = spec else { return e };
    if !matches!(e.code, ErrorCode::MalformedGltf | ErrorCode::UnsupportedFormat) {
        return e;
    }
    let mut detail = match e.detail.take().map(|d| *d) {
        Some(Value::Object(m)) => m,
        Some(other) => [("reason".to_string(), other)].into_iter().collect(),
        None => Map::new(),
    };
    let messages: Vec<Value> = outcome.messages.iter().take(100).map(|m| Value::Object(m.clone())).collect();
    detail.insert("validator_errors".into(), Value::from(outcome.errors));
    detail.insert("validator_messages".into(), Value::Array(messages));
    e.detail = Some(Box::new(Value::Object(detail)));
    e
}

/// Runs every catalog check on a loaded asset (SPEC-001 from `spec`, the
/// RND checks from `render`).
pub fn run_checks(
    asset: &Asset,
    opts: &Options,
    spec: Option<&SpecRun>,
    render: Option<&RenderRun>,
) -> Vec<CheckResult> {
    run_checks_phased(asset, opts, spec, render, phased(asset))
}

/// [`run_checks`] with the order chosen by the caller: in two phases
/// (`phased`, as [`run_checks`] runs a mesh of [`PHASED_WORLD_BYTES`] or
/// more) or with the mesh built beside the checks that never read it. The
/// results are the same either way; the tests hold that.
#[doc(hidden)]
pub fn run_checks_phased(
    asset: &Asset,
    opts: &Options,
    spec: Option<&SpecRun>,
    render: Option<&RenderRun>,
    phased: bool,
) -> Vec<CheckResult> {
    let checks = Checks { opts, spec, render };
    let results = if phased {
        let mut results = checks.first_phase(asset);
        results.extend(checks.second_phase(asset));
        results
    } else {
        checks.overlapped(asset)
    };
    in_catalog_order(results)
}

/// [`run_checks`] on an asset the caller owns: a large mesh's second phase
/// runs after every primitive's UVs, normals, tangents and colours are
/// freed ([`crate::asset::scene::Scene::free_surface_attributes`]; only the
/// first phase's checks and the renderer, which has drawn by then, read
/// them), so they are not held beside the welded mesh. The asset keeps
/// positions and triangles, which is all the report's stats and SPEC-001's
/// second run read.
fn run_checks_freeing(
    asset: &mut Asset,
    opts: &Options,
    spec: Option<&SpecRun>,
    render: Option<&RenderRun>,
) -> Vec<CheckResult> {
    if !phased(asset) {
        return run_checks(asset, opts, spec, render);
    }
    let checks = Checks { opts, spec, render };
    // The light checks, PERF-006 (the only one that reads the normals,
    // tangents and colours) first, beside the chain's first check, then
    // those streams freed: the rest of the phase, UV-004 and UV-005 (its
    // peak) among it, runs without them (the 32 MB sphere's normals are 7
    // MB).
    let mut results = checks.first_phase_head(asset);
    timed(
        || "vertex streams freed (normals, tangents, colours)".into(),
        || {
            asset.scene.free_vertex_streams();
            release_free_memory();
        },
    );
    let (rest, left) = checks.first_phase_rest(asset);
    results.extend(rest);
    // The chain's last tail (UV-008's quantiles, over its own samples) on
    // this thread, beside the rest of the phase's end and the world mesh's
    // build, which a thread that steals them starts (or this one, after).
    // Its samples, freed once it is done, are unmapped then rather than
    // kept for the build (as they were before it, run in turn). The build
    // then runs on the thread that stole it, and the second phase's glibc
    // arenas are not the ones it freed into: s13's peak is 2 MiB higher
    // (BENCHMARKS.md, "Thirtieth step").
    let (last, ()) = rayon::join(
        || {
            left.map(|tail| {
                let done = tail.finish();
                crate::memory::release_cached();
                done
            })
        },
        || {
            asset.scene.free_surface_attributes();
            release_free_memory();
            // The mesh is built here, with the scene's positions and
            // triangles freed as it reads them: nothing after this reads
            // them (the renderer has drawn, the first phase's checks have
            // run, and what the mesh's checks read from the unwelded
            // corners is computed on the way).
            let selected = |def: &CheckDef| opts.selection.runs(def.id);
            if CATALOG.iter().any(|def| catalog::reads_world(def) && selected(def)) {
                let tolerance = opts.profile.get(&crate::checks::WELD_TOLERANCE);
                let regularity = selected(&crate::checks::top::TRIANGLE_REGULARITY);
                timed(
                    || "shared data (welded world mesh, the scene's geometry freed)".into(),
                    || asset.scene.build_world_mesh_freeing(tolerance, regularity),
                );
            }
        },
    );
    results.extend(last);
    results.extend(checks.second_phase(asset));
    in_catalog_order(results)
}

/// Hands the pages of freed heap memory back to the system (glibc's
/// `malloc_trim`, and the large block [`crate::memory`] keeps for reuse,
/// unmapped): the first phase's arrays, freed in the middle of the
/// heap, would otherwise stay resident while the mesh is built beside them
/// (the 32 MB sphere's peak: 102-110 MB without, 99-102 MB with; five
/// interleaved runs each, BENCHMARKS.md). Also called once an input over
/// [`HELD_MAX_BYTES`] is done, so that its freed arrays are not the
/// resident floor under the next input's peak (a server that had run a 32
/// MB job idled 25 MB larger, not 42).
fn release_free_memory() {
    crate::memory::release_cached();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the system; it touches
    // no memory the program holds.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The size from which glibc serves a block from a mapping of its own,
/// returned to the system when freed ([`steady_large_blocks`]).
pub const STEADY_MMAP_THRESHOLD: usize = 4 << 20;

/// Makes glibc serve every block of [`STEADY_MMAP_THRESHOLD`] or more from
/// a mapping of its own, for the rest of the process, instead of letting
/// the threshold rise (glibc raises it to the size of each mapped block
/// freed, up to 32 MiB, and the large arrays of the next input then come
/// from the heap, whose freed middle stays resident). The service calls it
/// at start: after its first large job every later job's arrays came from
/// the heap, and a 32 MB sphere's job peaked at 103-116 MB instead of
/// 89-94 (64 MB: 182-211 against 161-163). The engine calls it for an
/// input larger than [`HELD_MAX_BYTES`] (the CLI on the 32 MB sphere:
/// 87-92 -> 84 MB, for 0-8 % more CPU, the kernel zeroing fresh pages); a
/// folder of small files keeps glibc's rising threshold, which is faster
/// there (BENCHMARKS.md, "Sixth step"). A user who sets the threshold
/// (`MALLOC_MMAP_THRESHOLD_`, or `mmap_threshold` in `GLIBC_TUNABLES`)
/// keeps it.
///
/// It also turns on [`crate::memory::reuse_large_blocks`]: from then on
/// the blocks of [`crate::memory::LARGE_BYTES`] (the same 4 MiB) or more
/// are mapped by meshcheck's allocator rather than glibc, and a freed one
/// is kept for the next instead of being zeroed again by the kernel
/// (BENCHMARKS.md, "Eighteenth step"). Whether it has run is that switch's
/// state, [`crate::memory::reusing_large_blocks`] (glibc has no getter for
/// the threshold; the tests read the switch).
pub fn steady_large_blocks() {
    // Once per process (every later large input would read the same
    // environment and set the same value), and only on Linux, where both
    // the switch and the threshold apply.
    if !crate::memory::reuse_large_blocks() {
        return;
    }
    set_mmap_threshold(STEADY_MMAP_THRESHOLD);
}

/// Fixes glibc's mmap threshold at `bytes` for the rest of the process,
/// unless the user set it (`MALLOC_MMAP_THRESHOLD_`, or `mmap_threshold` in
/// `GLIBC_TUNABLES`). Only on Linux with glibc.
fn set_mmap_threshold(bytes: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let chosen = std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
            || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("glibc.malloc.mmap_threshold"));
        if !chosen {
            // SAFETY: mallopt only sets an allocator parameter (under the
            // allocator's own lock).
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, bytes as libc::c_int);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = bytes;
}

/// The largest input [`lean_heap_for_one_input`] applies to.
pub const LEAN_ONE_INPUT_BELOW: u64 = 4 << 20;

/// glibc's starting mmap threshold, which [`lean_heap_for_one_input`] keeps.
pub const LEAN_MMAP_THRESHOLD: usize = 128 << 10;

/// For a run whose only input (the CLI on one file) is smaller than
/// [`LEAN_ONE_INPUT_BELOW`]: glibc's mmap threshold stays at its starting
/// value, 128 KiB, for the rest of the process, rather than rising to the
/// size of each mapped block freed (the load's temporary arrays). Every
/// array of 128 KiB or more is then a mapping of its own, handed back when
/// freed, not a block of a heap whose freed middle stays resident under
/// the checks that follow. On the 1 MB sphere of `cargo bench --bench
/// scale` the CLI's peak fell by about 0.5 MiB and its longest runs' by
/// more, in the same time (BENCHMARKS.md, "Thirty-second step"). Not
/// above it: the 8 MB sphere's peak fell by 2 MB for 18 % more time (the
/// kernel zeroing every fresh array), and it is within three times its
/// size without. Not for several inputs: over the shared assets folder the
/// same threshold doubled the system time (0.16 -> 0.29 s), and a folder
/// keeps glibc's rising threshold. A user who set the threshold keeps it;
/// an input over [`HELD_MAX_BYTES`] gets [`steady_large_blocks`]' instead.
pub fn lean_heap_for_one_input(bytes: u64) {
    if bytes < LEAN_ONE_INPUT_BELOW {
        set_mmap_threshold(LEAN_MMAP_THRESHOLD);
    }
}

/// Whether every input's freed memory is handed back once it is done
/// ([`hand_back_after_every_input`]).
static HAND_BACK_EVERY_INPUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, for the rest of the process, what every input freed is
/// handed back to the system once it is done (`release_free_memory`), not
/// only an input's over [`HELD_MAX_BYTES`]. The service calls it at start:
/// each job's peak is its own, and a small job's arrays (below the 4 MiB
/// of [`STEADY_MMAP_THRESHOLD`], so in glibc's heap) stayed resident in
/// the heap's middle, under the next job's mapped arrays. After an 8 MB
/// sphere's job the 32 MB sphere's peaked at 105-113 MB (3.4-3.6 x its
/// size), against 88-90 MB when it came first or with this (BENCHMARKS.md,
/// "Twenty-second step"). A folder run of the CLI keeps the freed memory
/// of its small inputs for the next one, which is faster there.
pub fn hand_back_after_every_input() {
    HAND_BACK_EVERY_INPUT.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether `asset`'s checks run in two phases ([`PHASED_WORLD_BYTES`]): a
/// large mesh's checks that never read the world mesh run first, side by
/// side, then the mesh is built and its checks run, so that the others'
/// working arrays (UV-005's islands, PERF-006's vertex tables) are freed
/// before the mesh is built rather than held beside it.
fn phased(asset: &Asset) -> bool {
    asset.scene.world_mesh_bytes() >= PHASED_WORLD_BYTES
}

fn in_catalog_order(mut results: Indexed) -> Vec<CheckResult> {
    results.sort_unstable_by_key(|(idx, _)| *idx);
    results.into_iter().map(|(_, r)| r).collect()
}

/// What every check of one run reads besides the asset.
#[derive(Clone, Copy)]
struct Checks<'a> {
    opts: &'a Options,
    spec: Option<&'a SpecRun>,
    render: Option<&'a RenderRun>,
}

// What several checks share (the welded world mesh, the degenerate flags)
// is built once, before the checks that read it: a check that found it
// half-built on a rayon thread could otherwise wait on itself (a thread
// that waits in a `par_iter` may pick up another check's job). Every check
// runs side by side with the others on the thread pool. Results keep
// catalog order, whatever the scheduling.
impl Checks<'_> {
    fn run(&self, asset: &Asset, idx: usize, def: &'static CheckDef) -> (usize, CheckResult) {
        (idx, timed(|| format!("check {}", def.id), || run_check(def, asset, self.opts, self.spec, self.render)))
    }

    fn prepare(&self, asset: &Asset) {
        let selected = |def: &CheckDef| self.opts.selection.runs(def.id);
        let (spec, render) = (self.spec, self.render);
        let prepare = || catalog::prepare(&Ctx { asset, profile: &self.opts.profile, spec, render }, &selected);
        // Built already (the freeing build of a large mesh, timed there):
        // what is left is the passes some checks share over it.
        if asset.scene.world.get().is_some() {
            return timed(|| "shared passes over the world mesh".into(), prepare);
        }
        timed(|| "shared data (welded world mesh)".into(), prepare)
    }

    /// The selected checks of the catalog, side by side on the pool, each
    /// a job of its own, started in catalog order or (`last_first`) the
    /// reverse: a thread alone on the pool runs them in that order, and a
    /// thread that steals takes from the other end. One job a check: split
    /// as rayon splits a slice by default (into about four runs of the
    /// catalog on two threads), GEO-002, GEO-004, GEO-007 and GEO-009,
    /// neighbours in it, ran one after another on one thread while the
    /// other had nothing left to steal.
    fn on_pool(&self, asset: &Asset, select: impl Fn(&CheckDef) -> bool + Sync, last_first: bool) -> Indexed {
        let run = |(idx, def): (usize, &&'static CheckDef)| self.run(asset, idx, def);
        let all = CATALOG.par_iter().with_max_len(1).enumerate();
        if last_first {
            all.rev().filter(|(_, d)| select(d)).map(run).collect()
        } else {
            all.filter(|(_, d)| select(d)).map(run).collect()
        }
    }

    /// The selected checks one after another on this thread, in catalog
    /// order or (`last_first`) the reverse.
    fn in_turn(&self, asset: &Asset, select: impl Fn(&CheckDef) -> bool, last_first: bool) -> Indexed {
        let chosen = (0..CATALOG.len()).filter(|&i| select(CATALOG[i]));
        let order: Vec<usize> = if last_first { chosen.rev().collect() } else { chosen.collect() };
        order.into_iter().map(|idx| self.run(asset, idx, CATALOG[idx])).collect()
    }

    /// The checks `order` (catalog positions) one after another on this
    /// thread, each still using the pool inside, as [`Checks::in_turn`]
    /// runs them, except that a check's [`crate::checks::Tail`] runs
    /// beside the rest: the tail on this thread, the next check started by
    /// a thread that steals it (or by this one once the tail is done, so
    /// the order holds on one thread). The last check's tail is handed
    /// back, to run beside what follows the chain.
    fn chain(&self, asset: &Asset, order: &[usize]) -> (Indexed, Option<Left>) {
        let Some((&idx, rest)) = order.split_first() else {
            return (Vec::new(), None);
        };
        let def = CATALOG[idx];
        let pending = timed(
            || format!("check {}", def.id),
            || run_check_split(def, asset, self.opts, self.spec, self.render, true),
        );
        match pending {
            Pending::Done(r) => {
                let (mut out, left) = self.chain(asset, rest);
                out.push((idx, r));
                (out, left)
            }
            Pending::Tail(tail) => {
                let tail = Left(idx, tail);
                if rest.is_empty() {
                    return (Vec::new(), Some(tail));
                }
                let (r, (mut out, left)) = rayon::join(|| tail.finish(), || self.chain(asset, rest));
                out.push(r);
                (out, left)
            }
        }
    }

    /// The selected checks of a large mesh's phase: the memory-hungry ones
    /// ([`catalog::memory_hungry`]) one after another on one thread, in
    /// catalog order or (`last_first`) the reverse, each still using the
    /// pool inside, beside the others on the pool (those that
    /// [`catalog::runs_first`] first, one after another). So their arrays are
    /// never held at once: every faster schedule tried for the first phase
    /// (one queue, costliest first) ran two of them side by side and raised
    /// the peak by 10-25 MB (BENCHMARKS.md, "Seventh step"); a test holds
    /// the first phase's four apart. A check's tail, a summary over arrays
    /// of its own, runs beside the next one's start ([`Checks::chain`]).
    fn chained(&self, asset: &Asset, select: impl Fn(&CheckDef) -> bool + Sync, last_first: bool) -> Indexed {
        let (mut results, left) = self.chained_leaving(asset, select, last_first);
        results.extend(left.map(Left::finish));
        results
    }

    /// [`Checks::chained`], the chain's last [`crate::checks::Tail`] (when
    /// its last check has one) handed back, not run.
    fn chained_leaving(
        &self,
        asset: &Asset,
        select: impl Fn(&CheckDef) -> bool + Sync,
        last_first: bool,
    ) -> (Indexed, Option<Left>) {
        // With no memory-hungry check selected (`--only GEO`, say) there is
        // no chain to keep the others' tables apart from: the checks that
        // run first start at once, one after another, beside the others on
        // the pool. GEO-008, at 27 ms the longest check of s13's `--only
        // GEO` run, ran alone at the phase's end when the pool started it
        // after GEO-009 (last first); started at once, it ends the phase
        // beside the others.
        if !CATALOG.iter().any(|d| select(d) && catalog::memory_hungry(d) && self.opts.selection.runs(d.id)) {
            let (mut first, rest) = rayon::join(
                || self.in_turn(asset, |d| select(d) && catalog::runs_first(d), false),
                || self.on_pool(asset, |d| select(d) && !catalog::runs_first(d), last_first),
            );
            first.extend(rest);
            return (first, None);
        }
        let chosen = (0..CATALOG.len()).filter(|&i| select(CATALOG[i]) && catalog::memory_hungry(CATALOG[i]));
        let order: Vec<usize> = if last_first { chosen.rev().collect() } else { chosen.collect() };
        let ((mut hungry, left), rest) = rayon::join(
            || self.chain(asset, &order),
            || {
                // The checks that run first beside the chain
                // ([`catalog::runs_first`]), one after another, then the rest.
                let light = |d: &CheckDef| select(d) && !catalog::memory_hungry(d);
                let mut first = self.in_turn(asset, |d| light(d) && catalog::runs_first(d), false);
                first.extend(self.on_pool(asset, |d| light(d) && !catalog::runs_first(d), last_first));
                first
            },
        );
        hungry.extend(rest);
        (hungry, left)
    }

    /// A large mesh's first phase: the checks that never read the world
    /// mesh, UV-002, UV-004, UV-005 (each holding 40-70 MB above a 64 MB
    /// sphere's loaded asset) and UV-008 chained.
    fn first_phase(&self, asset: &Asset) -> Indexed {
        self.chained(asset, |d| !catalog::reads_world(d), false)
    }

    /// Whether `def` is in [`Checks::first_phase_head`]: a check of the
    /// first phase that is not memory-hungry, or that reads the vertex
    /// streams ([`catalog::reads_vertex_streams`]: they are freed after the
    /// head), or the first memory-hungry one (UV-002), which the others run
    /// beside.
    fn in_first_head(def: &CheckDef) -> bool {
        let first_hungry = CATALOG.iter().find(|d| !catalog::reads_world(d) && catalog::memory_hungry(d)).map(|d| d.id);
        !catalog::reads_world(def)
            && (!catalog::memory_hungry(def) || catalog::reads_vertex_streams(def) || Some(def.id) == first_hungry)
    }

    /// [`Checks::first_phase`] for an asset the engine owns, in two steps
    /// with the vertex streams freed between them: first the light checks
    /// beside the chain's first check (PERF-006 first, as
    /// [`catalog::runs_first`] has it, then the others on the pool, beside
    /// UV-002), ... UV-002 rasterises beside the light checks, in ranges
    /// of its triangles that both cores take once they are done (a raster
    /// of up to 1024 x 1024; a larger one on one thread); after them,
    /// UV-004, UV-005 and
    /// UV-008 each use both cores inside. With the light checks after the
    /// streams were freed, beside UV-004, s13 took 0.470 s against 0.460
    /// s, for 0.5 MB less at its peak (BENCHMARKS.md, "Twenty-fifth step").
    fn first_phase_head(&self, asset: &Asset) -> Indexed {
        self.chained(asset, Self::in_first_head, false)
    }

    /// ... then the rest of the phase (the other memory-hungry checks),
    /// chained as [`Checks::first_phase`] chains it.
    fn first_phase_rest(&self, asset: &Asset) -> (Indexed, Option<Left>) {
        self.chained_leaving(asset, |d| !catalog::reads_world(d) && !Self::in_first_head(d), false)
    }

    /// The world mesh, then its shared passes (TOP-001's and TOP-004's edge
    /// walk beside GEO-008's fan walks, both cores each), then its checks,
    /// TOP-001 and TOP-003 chained. Last in the catalog first: TOP-001's
    /// pairing, sequential, runs on one core while the light checks beside
    /// the chain, last first too, take the other (the short GEO checks and
    /// TOP-002 at the end, where both cores take them once TOP-001 is done).
    fn second_phase(&self, asset: &Asset) -> Indexed {
        self.prepare(asset);
        // What the shared passes freed (GEO-008's fan tables, 8 bytes a
        // vertex, from glibc's heaps) is handed back before TOP-001's
        // pairing maps its pointers: held, s13's peak spread over 91-97
        // MiB (BENCHMARKS.md, "Thirty-third step").
        release_free_memory();
        self.chained(asset, catalog::reads_world, true)
    }

    /// A smaller mesh: built beside the checks that never read it, then
    /// its checks, all on the pool.
    fn overlapped(&self, asset: &Asset) -> Indexed {
        let (mut results, rest) = rayon::join(
            || {
                self.prepare(asset);
                self.on_pool(asset, catalog::reads_world, false)
            },
            || self.on_pool(asset, |d| !catalog::reads_world(d), false),
        );
        results.extend(rest);
        results
    }
}

/// From this estimated size of the welded world mesh up
/// ([`crate::asset::scene::Scene::world_mesh_bytes`]: about 20,000
/// triangles of a mesh with a vertex for every two triangles),
/// [`run_checks`] builds the mesh only after the checks that do not read
/// it have run, so their working memory is not held beside it. It was 128
/// MiB (670,000 triangles) until the thirty-first step of issue 22: the
/// 8 MB sphere of `cargo bench --bench scale` (280,000 triangles) then
/// peaked at 47 MB, 33.7 in two phases (its checks 4 % slower, 97.5 ->
/// 101.6 ms); the 1 MB sphere (35,000 triangles) at 19.0 MB, 17.6 in two
/// phases (2 ms slower). A small file (the folder benches' cubes and
/// quads, a few hundred triangles) stays under it, where building the
/// mesh beside the other checks is faster and its arrays are small
/// (BENCHMARKS.md, "Thirty-first step").
pub const PHASED_WORLD_BYTES: u64 = 4 << 20;

/// Check results with their catalog positions.
type Indexed = Vec<(usize, CheckResult)>;

/// A check's last step not run yet, with the check's catalog position.
struct Left(usize, Box<dyn FnOnce() -> CheckResult + Send>);

impl Left {
    /// Runs it (timed as the check's summary).
    fn finish(self) -> (usize, CheckResult) {
        let Left(idx, tail) = self;
        (idx, timed(|| format!("summary of {}", CATALOG[idx].id), tail))
    }
}

/// Set (to anything) to print each check's wall time to stderr: a
/// developer's aid for finding where the time goes (BENCHMARKS.md).
pub const TIMINGS_ENV: &str = "MESHCHECK_CHECK_TIMES";

/// Runs `work`; with [`TIMINGS_ENV`] set, prints `what()`, its wall time
/// and when it started and ended (ms since the first timed step), so that a
/// run's critical path can be read off (the label is only built then).
fn timed<T>(what: impl FnOnce() -> String, work: impl FnOnce() -> T) -> T {
    static ON: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| std::env::var_os(TIMINGS_ENV).is_some());
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = std::time::Instant::now();
    let origin = *ORIGIN.get_or_init(|| start);
    let out = work();
    if *ON {
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let end = std::time::Instant::now();
        eprintln!("{} {:.1} ms ({:.1}..{:.1})", what(), ms(end - start), ms(start - origin), ms(end - origin));
    }
    out
}

/// Builds the report for a loaded asset without SPEC-001's validator
/// (SPEC-001, if selected, reports skipped); for benchmarks and tests of the
/// engine's own checks.
pub fn report_for(asset: &Asset, opts: &Options) -> Report {
    let checks = run_checks(asset, opts, None, None);
    assemble(asset, opts, checks, None)
}

fn assemble(asset: &Asset, opts: &Options, checks: Vec<CheckResult>, validator: Option<EngineInfo>) -> Report {
    let (verdict, summary) = report::rollup(&checks);
    Report {
        schema_version: report::SCHEMA_VERSION.into(),
        report_id: None,
        created_at: now_rfc3339(),
        expires_at: None,
        input: asset.info.clone(),
        profile: ProfileInfo {
            name: opts.profile.name.clone(),
            thresholds: opts.profile.thresholds_json(),
            overrides: opts.profile.overrides_json(),
        },
        mode: opts.mode,
        engine: engine_info(),
        validator,
        verdict,
        summary,
        stats: stats(asset),
        notes: report_notes(&asset.notes),
        checks,
        screenshots: None,
    }
}

fn skipped(def: &CheckDef, severity: Severity, reason: &str) -> CheckResult {
    let mut measured = Map::new();
    measured.insert("reason".into(), Value::String(reason.into()));
    CheckResult {
        id: def.id.into(),
        name: def.name.into(),
        category: def.category.into(),
        severity,
        status: Status::Skipped,
        measured,
        threshold: Map::new(),
        message: format!("skipped: {reason}"),
    }
}

fn run_check(
    def: &'static CheckDef,
    asset: &Asset,
    opts: &Options,
    spec: Option<&SpecRun>,
    render: Option<&RenderRun>,
) -> CheckResult {
    match run_check_split(def, asset, opts, spec, render, false) {
        Pending::Done(r) => r,
        Pending::Tail(t) => t(),
    }
}

/// A check run up to its last step: its result, or (a check of
/// [`catalog::split_run`]) that step, which gives it. One a check, held
/// for a moment: the result is not boxed.
#[allow(clippy::large_enum_variant)]
enum Pending {
    Done(CheckResult),
    Tail(Box<dyn FnOnce() -> CheckResult + Send>),
}

/// [`run_check`], up to the check's [`crate::checks::Tail`] when `split`
/// and the check has one.
fn run_check_split(
    def: &'static CheckDef,
    asset: &Asset,
    opts: &Options,
    spec: Option<&SpecRun>,
    render: Option<&RenderRun>,
    split: bool,
) -> Pending {
    let severity = opts.profile.severity_of(def.id, def.severity);
    if !opts.selection.runs(def.id) {
        return Pending::Done(skipped(def, severity, "not selected"));
    }
    if !cfg!(feature = "render") && opts.mode == Mode::Full && def.needs.renderer {
        return Pending::Done(skipped(def, severity, "renderer not in this build"));
    }
    let geometry = def.needs.geometry;
    if geometry && asset.scene.primitives.is_empty() && !asset.scene.unread.is_empty() {
        return Pending::Done(skipped(def, severity, &unread_reason(&asset.scene.unread)));
    }
    // The checks on the stills list the scene's notes with the renderer's own.
    let notes = (geometry && !asset.scene.notes.is_empty() && !def.needs.renderer).then(|| {
        asset.scene.notes.iter().take(crate::checks::MAX_LOCATIONS).map(|n| Value::String(n.to_string())).collect()
    });
    let cx = Ctx { asset, profile: &opts.profile, spec, render };
    let output = match catalog::split_run(def).filter(|_| split) {
        Some(run) => match guarded(|| run(&cx)) {
            Ok(crate::checks::Split::Tail(tail)) => {
                return Pending::Tail(Box::new(move || concluded(def, severity, guarded(|| tail.finish()), notes)));
            }
            Ok(crate::checks::Split::Done(out)) => Ok(out),
            Err(what) => Err(what),
        },
        None => guarded(|| (def.run)(&cx)),
    };
    Pending::Done(concluded(def, severity, output, notes))
}

/// `f`'s value, or what it said when it panicked (a check's panic becomes
/// its skip, not the run's end).
fn guarded<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|panic| panic_text(&*panic))
}

/// What a panic in a check said.
fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// A check's result from its output (or what its panic said), with the
/// scene's `notes` listed when the check is one to list them.
fn concluded(
    def: &CheckDef,
    severity: Severity,
    output: std::result::Result<CheckOutput, String>,
    notes: Option<Vec<Value>>,
) -> CheckResult {
    let mut m = match output {
        Ok(CheckOutput::Measured(m)) => m,
        Ok(CheckOutput::Skipped(reason)) => return skipped(def, severity, &reason),
        Err(what) => return skipped(def, severity, &format!("internal error in the check: {what}")),
    };
    if let Some(notes) = notes {
        m.measured.insert("notes".into(), Value::Array(notes));
    }
    let status = match (m.outcome, severity) {
        (_, Severity::Info) => Status::Pass,
        (Comparison::Within, _) => Status::Pass,
        (Comparison::WarnBand, _) => Status::Warn,
        (Comparison::Breach, Severity::Error) => Status::Fail,
        (Comparison::Breach, Severity::Warning) => Status::Warn,
    };
    CheckResult {
        id: def.id.into(),
        name: def.name.into(),
        category: def.category.into(),
        severity,
        status,
        measured: m.measured,
        threshold: m.threshold,
        message: m.message,
    }
}

/// Most notes a report lists; the last one says how many more there were.
pub const MAX_NOTES: usize = 1000;

fn report_notes(notes: &[asset::Note]) -> Vec<report::ReportNote> {
    let note = |n: &asset::Note| report::ReportNote { pointer: n.pointer.clone(), message: n.message.clone() };
    if notes.len() <= MAX_NOTES {
        return notes.iter().map(note).collect();
    }
    let mut out: Vec<_> = notes[..MAX_NOTES - 1].iter().map(note).collect();
    let more = notes.len() - (MAX_NOTES - 1);
    out.push(report::ReportNote { pointer: String::new(), message: format!("{more} more notes are not listed") });
    out
}

/// Why a geometry check skips when no primitive could be read.
fn unread_reason(unread: &[asset::Note]) -> String {
    let first = &unread[0];
    let more = match unread.len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    format!("no primitive could be read: {first}{more}")
}

fn stats(asset: &Asset) -> Stats {
    let scene = &asset.scene;
    let root = &asset.root;
    let meshes: BTreeSet<usize> = scene.primitives.iter().map(|p| p.mesh).collect();
    Stats {
        nodes: scene.nodes.len() as u64,
        meshes: meshes.len() as u64,
        primitives: scene.primitives.len() as u64,
        instances: scene.instances.len() as u64,
        triangles: scene.triangles(),
        vertices: scene.vertices(),
        draw_calls: scene.draw_calls,
        materials: root.materials.len() as u64,
        textures: root.textures.len() as u64,
        images: root.images.len() as u64,
        animations: root.animations.len() as u64,
        skins: root.skins.len() as u64,
        extensions_used: root.extensions_used.clone(),
        extensions_required: root.extensions_required.clone(),
    }
}

/// The current time in RFC 3339 UTC, to the second.
pub fn now_rfc3339() -> String {
    let now = time::OffsetDateTime::now_utc().replace_nanosecond(0).unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    now.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

#[cfg(feature = "render")]
/// A render request: the stills and, optionally, a turntable.
#[derive(Debug, Clone)]
pub struct RenderJob {
    /// Stills: angles, size, background, watermark.
    pub request: crate::render::Request,
    /// The turntable, if asked for.
    pub turntable: Option<report::TurntableSpec>,
}

#[cfg(feature = "render")]
impl RenderJob {
    /// Checks the request against the limits: 1 to 12 angles within range,
    /// sizes 128 to 1024, turntable format `gif` with 8 to 120 frames. Every
    /// breach is BAD_REQUEST.
    pub fn check(&self) -> Result<()> {
        use crate::render::{MAX_ANGLES, SIZE_RANGE, TURNTABLE_FRAMES};
        let req = &self.request;
        if req.angles.is_empty() || req.angles.len() > MAX_ANGLES {
            return Err(Error::bad_request(format!("angles: 1 to {MAX_ANGLES} views, got {}", req.angles.len()))
                .with_detail(serde_json::json!({"field": "angles", "reason": "count"})));
        }
        for a in &req.angles {
            a.validate().map_err(|why| {
                Error::bad_request(format!("angles: {why}"))
                    .with_detail(serde_json::json!({"field": "angles", "reason": "range"}))
            })?;
        }
        let size_ok = |s: u32| (SIZE_RANGE.0..=SIZE_RANGE.1).contains(&s);
        if !size_ok(req.size) {
            return Err(Error::bad_request(format!(
                "size must be {} to {} pixels, got {}",
                SIZE_RANGE.0, SIZE_RANGE.1, req.size
            ))
            .with_detail(serde_json::json!({"field": "size", "reason": "range"})));
        }
        if let Some(t) = &self.turntable {
            if t.format != "gif" {
                return Err(Error::bad_request(format!("turntable format must be gif, got {:?}", t.format))
                    .with_detail(serde_json::json!({"field": "turntable.format", "reason": "unsupported"})));
            }
            if !(TURNTABLE_FRAMES.1..=TURNTABLE_FRAMES.2).contains(&t.frames) {
                return Err(Error::bad_request(format!(
                    "turntable frames must be {} to {}, got {}",
                    TURNTABLE_FRAMES.1, TURNTABLE_FRAMES.2, t.frames
                ))
                .with_detail(serde_json::json!({"field": "turntable.frames", "reason": "range"})));
            }
            if !size_ok(t.size) {
                return Err(Error::bad_request(format!(
                    "turntable size must be {} to {} pixels, got {}",
                    SIZE_RANGE.0, SIZE_RANGE.1, t.size
                ))
                .with_detail(serde_json::json!({"field": "turntable.size", "reason": "range"})));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "render")]
/// What a render produced: the report (screenshot `path`/`url` unset; the
/// caller writes or stores the files and fills them in), the stills and the GIF.
pub struct RenderOutput {
    /// The render report.
    pub report: report::RenderReport,
    /// The stills, in request order.
    pub stills: Vec<crate::render::Still>,
    /// The turntable GIF, when asked for.
    pub gif: Option<Vec<u8>>,
}

#[cfg(feature = "render")]
/// Renders one input: the engine behind `meshcheck render` and POST /v1/render.
pub fn render(input: Input, job: &RenderJob) -> Result<RenderOutput> {
    render_gated(input, job, &crate::render::Drawer::Local, &|| Ok(()))
}

#[cfg(feature = "render")]
/// [`render`] with a gate called once the request is checked and the input
/// has loaded, before the renderer starts (the service charges there, so a
/// renderer failure after it is refunded as RENDER_FAILED).
pub fn render_gated(
    input: Input,
    job: &RenderJob,
    drawer: &crate::render::Drawer,
    gate: &dyn Fn() -> Result<()>,
) -> Result<RenderOutput> {
    job.check()?;
    let source = crate::render::Source::for_drawer(drawer, &input);
    let opened = asset::open(input)?;
    let local = matches!(drawer, crate::render::Drawer::Local);
    let asset = asset::load_opened_with(&opened, asset::LoadOptions { keep_images: local })?;
    gate()?;
    drawer.ready()?;
    let started = std::time::Instant::now();
    let (rendered, adapter) = drawer.render(&source, &asset, &job.request)?;
    let gif = match &job.turntable {
        Some(t) => Some(drawer.turntable(&source, &asset, t.frames, t.size, job.request.background)?),
        None => None,
    };
    let render_ms = (started.elapsed().as_secs_f64() * 1000.0 * 10.0).round() / 10.0;
    let screenshots = rendered.stills.iter().enumerate().map(|(i, s)| s.screenshot(i)).collect();
    let report = report::RenderReport {
        schema_version: report::SCHEMA_VERSION.into(),
        render_id: None,
        created_at: now_rfc3339(),
        expires_at: None,
        input: asset.info.clone(),
        options: report::RenderOptions {
            angles: job.request.angles.clone(),
            size: job.request.size,
            background: job.request.background.to_string(),
            lighting: "studio".into(),
            turntable: job.turntable.clone(),
        },
        renderer: adapter,
        stats: report::RenderStats {
            triangles: rendered.triangles,
            draw_calls: rendered.draw_calls,
            views: rendered.stills.len() as u64,
            render_ms,
        },
        screenshots,
        turntable: job.turntable.as_ref().map(|t| report::TurntableOut {
            frames: t.frames,
            size: t.size,
            delay_cs: crate::render::gif::frame_delay_cs(t.frames),
            path: None,
            url: None,
        }),
        notes: rendered.notes.clone(),
    };
    Ok(RenderOutput { report, stills: rendered.stills, gif })
}

#[cfg(feature = "render")]
/// Draws a turntable GIF of one input with `drawer` (the report card's
/// turntable, `validate --format html --turntable`); the spec is checked as
/// [`RenderJob::check`] checks it.
pub fn turntable(input: Input, spec: &report::TurntableSpec, drawer: &crate::render::Drawer) -> Result<Vec<u8>> {
    RenderJob { request: crate::render::Request::standard(crate::render::DEFAULT_SIZE), turntable: Some(spec.clone()) }
        .check()?;
    let source = crate::render::Source::for_drawer(drawer, &input);
    let opened = asset::open(input)?;
    let local = matches!(drawer, crate::render::Drawer::Local);
    let asset = asset::load_opened_with(&opened, asset::LoadOptions { keep_images: local })?;
    drawer.turntable(&source, &asset, spec.frames, spec.size, crate::render::Background::default())
}

// Stills for the vision model: the engine draws them (or reads them from a
// folder) and hands them to `vision` as PNG data.

#[cfg(all(feature = "render", feature = "vision"))]
/// Renders the six standard views at the vision model's still size for the
/// model (`meshcheck inspect FILE`).
pub fn vision_stills(asset: &crate::asset::Asset) -> Result<Vec<vision::Still>> {
    vision_stills_with(&crate::render::Drawer::Local, &Default::default(), asset)
}

#[cfg(all(feature = "render", feature = "vision"))]
/// [`vision_stills`] drawn by `drawer` (a worker draws `source`).
pub fn vision_stills_with(
    drawer: &crate::render::Drawer,
    source: &crate::render::Source,
    asset: &crate::asset::Asset,
) -> Result<Vec<vision::Still>> {
    let (out, _) = drawer.render(source, asset, &crate::render::Request::standard(vision::STILL_SIZE))?;
    Ok(out
        .stills
        .iter()
        .enumerate()
        .map(|(i, s)| vision::Still {
            shot: vision::Shot {
                name: s.angle.file_stem(i),
                angle: s.angle,
                size: s.image.width(),
                path: None,
                url: None,
            },
            png: crate::render::image_out::png(&s.image),
        })
        .collect())
}

#[cfg(all(feature = "render", feature = "vision"))]
/// Reads stills written by `meshcheck render` (the standard views' PNGs in
/// `dir`), reduced to [`vision::STILL_SIZE`] when larger.
pub fn vision_stills_from_dir(dir: &std::path::Path) -> Result<Vec<vision::Still>> {
    let mut out = Vec::new();
    for (name, angle) in crate::render::STANDARD_ANGLES {
        let path = dir.join(format!("{name}.png"));
        if !path.is_file() {
            continue;
        }
        let img = image::open(&path)
            .map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))?
            .into_rgba8();
        let img = if img.width() > vision::STILL_SIZE || img.height() > vision::STILL_SIZE {
            image::DynamicImage::ImageRgba8(img).thumbnail(vision::STILL_SIZE, vision::STILL_SIZE).into_rgba8()
        } else {
            img
        };
        out.push(vision::Still {
            shot: vision::Shot {
                name: name.into(),
                angle,
                size: img.width(),
                path: Some(path.display().to_string()),
                url: None,
            },
            png: crate::render::image_out::png(&img),
        });
    }
    if out.is_empty() {
        return Err(Error::bad_request(format!(
            "{} holds none of the standard stills (front.png, right.png, back.png, left.png, top.png, three_quarter.png); write them with `meshcheck render`",
            dir.display()
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    /// After [`super::steady_large_blocks`], a block past the threshold is
    /// a mapping of its own even once a larger mapped block was freed
    /// (which, left to glibc, raises the threshold past it and serves it
    /// from the heap). glibc gives a mapped block the rest of its last
    /// page: its usable size is 16 bytes short of a whole number of pages.
    ///
    /// It runs in a process of its own (this test binary again, this test
    /// alone): in the shared one, a heap that other tests had left with a
    /// free chunk of 5 MiB served the block from the heap, whatever the
    /// threshold (glibc takes a free chunk before it maps one).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn blocks_past_the_steady_threshold_are_mapped_after_a_larger_one_is_freed() {
        if !crate::testing::alone(
            "engine::tests::blocks_past_the_steady_threshold_are_mapped_after_a_larger_one_is_freed",
        ) {
            return;
        }
        super::steady_large_blocks();
        drop(std::hint::black_box(vec![1u8; 16 << 20]));
        let block: Vec<u8> = Vec::with_capacity(super::STEADY_MMAP_THRESHOLD + (1 << 20) + 1);
        // SAFETY: the pointer is a live block from malloc.
        let usable = unsafe { libc::malloc_usable_size(block.as_ptr() as *mut libc::c_void) };
        assert_eq!(usable % 4096, 4096 - 16, "usable size {usable}");
    }

    /// Whether a block of 256 KiB asked for after a 2 MiB one was freed is
    /// a mapping of its own (its usable size 16 bytes short of whole pages),
    /// not a block of the heap: glibc's rising threshold, left alone, goes
    /// up to 2 MiB when that block is freed.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn mapped_after_a_larger_block_is_freed() -> bool {
        drop(std::hint::black_box(vec![1u8; 2 << 20]));
        let block: Vec<u8> = Vec::with_capacity((256 << 10) + 1);
        // SAFETY: the pointer is a live block from malloc.
        let usable = unsafe { libc::malloc_usable_size(block.as_ptr() as *mut libc::c_void) };
        usable % 4096 == 4096 - 16
    }

    /// [`super::lean_heap_for_one_input`] for an input smaller than
    /// [`super::LEAN_ONE_INPUT_BELOW`]: the threshold stays at 128 KiB. In
    /// a process of its own, as the next test: the threshold is the
    /// process's, and a block freed into the heap would serve the next.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn one_small_input_keeps_its_arrays_in_mappings_of_their_own() {
        if !crate::testing::alone("engine::tests::one_small_input_keeps_its_arrays_in_mappings_of_their_own") {
            return;
        }
        super::lean_heap_for_one_input(super::LEAN_ONE_INPUT_BELOW - 1);
        assert!(mapped_after_a_larger_block_is_freed(), "the threshold rose");
    }

    /// ... and for one of [`super::LEAN_ONE_INPUT_BELOW`] it still rises.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_larger_input_leaves_the_threshold_to_rise() {
        if !crate::testing::alone("engine::tests::a_larger_input_leaves_the_threshold_to_rise") {
            return;
        }
        super::lean_heap_for_one_input(super::LEAN_ONE_INPUT_BELOW);
        assert!(!mapped_after_a_larger_block_is_freed(), "the threshold did not rise");
    }

    /// After [`super::hand_back_after_every_input`], a small input's run
    /// hands back the free memory in the heap's middle (here 24 MiB of
    /// freed 96 KiB blocks, each held in place by a small live one after
    /// it, as a job's arrays leave the heap), which would otherwise stay
    /// resident under the next input's peak. In a process of its own: the
    /// switch is for the whole process.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn a_small_inputs_freed_heap_is_handed_back_once_asked() {
        if !crate::testing::alone("engine::tests::a_small_inputs_freed_heap_is_handed_back_once_asked") {
            return;
        }
        const BLOCKS: usize = 256;
        const BLOCK: usize = 96 << 10;
        let fragment = || {
            let mut pins = Vec::with_capacity(BLOCKS);
            let mut freed = Vec::with_capacity(BLOCKS);
            for i in 0..BLOCKS {
                freed.push(std::hint::black_box(vec![i as u8 | 1; BLOCK]));
                pins.push(std::hint::black_box(vec![1u8; 64]));
            }
            drop(freed);
            pins
        };
        let input = || super::Input::from_bytes("tiny.gltf", br#"{"asset":{"version":"2.0"}}"#.to_vec());
        let opts = super::Options {
            selection: super::Selection::parse(&[], &[crate::checks::spec::VALIDATOR.id.into()]).unwrap(),
            ..Default::default()
        };
        // Without the switch the freed blocks stay resident ...
        let _pins = fragment();
        let before = crate::testing::resident();
        super::validate(input(), &opts).unwrap();
        let kept = crate::testing::resident() as f64 - before as f64;
        assert!(kept > -((BLOCKS * BLOCK / 4) as f64), "{kept} bytes handed back unasked");
        // ... with it they go back.
        let _more = fragment();
        let before = crate::testing::resident();
        super::hand_back_after_every_input();
        super::validate(input(), &opts).unwrap();
        let back = before - crate::testing::resident();
        assert!(back > BLOCKS * BLOCK / 2, "{back} bytes handed back");
    }
}
