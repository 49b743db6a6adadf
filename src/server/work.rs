//! The work a call does on the engine, by kind: validating and rendering,
//! each with the parameters its endpoint validated. A queued job stores its
//! kind and parameters ([`JobSpec`]) and the queue runs it through
//! [`Work::run`]; the synchronous paths call the same functions.

use super::clock::rfc3339;
use super::media::{self, Owner};
use super::prices::Call;
use super::reports::store_report;
use super::state::AppState;
use crate::engine::{Options, RenderJob};
use crate::error::Error;
use crate::profile::Profile;
use crate::render::{Angle, Background, Request as Stills, rig::TURNTABLE_ELEVATION};
use crate::report::{Mode, TurntableSpec};
use crate::store::random_id;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Everything besides the bytes that decides a validation; stored with a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ValidateParams {
    /// Built-in profile name.
    pub profile: String,
    /// checks_only or full.
    pub mode: Mode,
    /// Budget overrides, in the order given.
    pub overrides: Vec<(String, f64)>,
    /// Weld tolerance in metres, when given.
    pub weld_tolerance: Option<f64>,
    /// Whether screenshots were asked for.
    pub screenshots: bool,
    /// The name shown in the report.
    pub filename: String,
    /// Text stamped on the stills (the demo).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<String>,
}

impl ValidateParams {
    /// What the price list charges for it (by mode: the renderer runs in full).
    pub fn call(&self) -> Call {
        Call::Validate { mode: self.mode }
    }

    /// Engine options (BAD_REQUEST on an unknown profile or override key).
    pub fn options(
        &self,
        validator: Option<std::sync::Arc<crate::validator::Validator>>,
    ) -> crate::error::Result<Options> {
        // Built-in names only: the service never reads a profile path from disk.
        let mut profile = Profile::builtin(&self.profile, crate::checks::catalog::schema())
            .map_err(|e| Error::field("profile", "unknown", e.message).with_help("profiles: web, mobile, pc, hero"))?;
        for (k, v) in &self.overrides {
            profile
                .apply_override(k, *v)
                .map_err(|e| Error::field("overrides", "unknown key or bad value", e.message))?;
        }
        if let Some(w) = self.weld_tolerance {
            crate::checks::set_weld_tolerance(&mut profile, w)
                .map_err(|e| Error::field("weld_tolerance", "range", e.message))?;
        }
        Ok(Options {
            drawer: Default::default(),
            profile,
            mode: self.mode,
            selection: Default::default(),
            validator,
            watermark: self.watermark.clone(),
        })
    }
}

/// A render request as validated; stored with a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderParams {
    /// The views.
    pub angles: Vec<Angle>,
    /// Still size.
    pub size: u32,
    /// `#RRGGBB` or `transparent`.
    pub background: String,
    /// The turntable, if asked for.
    pub turntable: Option<TurntableSpec>,
    /// The name shown in the report.
    pub filename: String,
}

impl RenderParams {
    /// What the price list charges for it (by stills and turntable).
    pub fn call(&self) -> Call {
        Call::Render { stills: self.angles.len(), turntable: self.turntable.is_some() }
    }

    /// The engine's request (BAD_REQUEST when a bound is broken).
    pub fn job(&self) -> crate::error::Result<RenderJob> {
        let background =
            Background::parse(&self.background).map_err(|why| Error::field("background", "format", why))?;
        let job = RenderJob {
            request: Stills { angles: self.angles.clone(), size: self.size, background, watermark: None },
            turntable: self.turntable.clone(),
        };
        job.check()?;
        Ok(job)
    }
}

/// A job's work: what it runs and with which parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    /// POST /v1/validate.
    Validate(ValidateParams),
    /// POST /v1/render.
    Render(RenderParams),
}

impl Work {
    /// The kind as the queue stores it.
    pub fn kind(&self) -> &'static str {
        match self {
            Work::Validate(_) => "validate",
            Work::Render(_) => "render",
        }
    }

    /// What the price list charges for the work (when a job is queued).
    pub fn call(&self) -> Call {
        match self {
            Work::Validate(p) => p.call(),
            Work::Render(p) => p.call(),
        }
    }

    /// What the queue stores for it.
    pub fn spec(&self) -> crate::error::Result<JobSpec> {
        let params = match self {
            Work::Validate(p) => serde_json::to_string(p),
            Work::Render(p) => serde_json::to_string(p),
        }
        .map_err(|e| Error::internal(e.to_string()))?;
        Ok(JobSpec { kind: self.kind(), params, cost: self.call().credits() })
    }

    /// The work a stored job names.
    pub fn parse(kind: &str, params: &str) -> crate::error::Result<Work> {
        let bad = |e: serde_json::Error| Error::internal(format!("job params: {e}"));
        match kind {
            "validate" => serde_json::from_str(params).map(Work::Validate).map_err(bad),
            "render" => serde_json::from_str(params).map(Work::Render).map_err(bad),
            other => Err(Error::internal(format!("unknown job kind {other}"))),
        }
    }

    /// Runs a queued job's work (charged when it was queued) and stores its
    /// result; returns the stored JSON. `file` is the blob's own file when
    /// the blob store keeps one ([`crate::store::Blobs::local_file`]).
    pub fn run(
        &self,
        st: &AppState,
        account_id: &str,
        bytes: Vec<u8>,
        file: Option<&Path>,
    ) -> crate::error::Result<String> {
        match self {
            Work::Validate(p) => run_validate(st, account_id, p, bytes, file),
            Work::Render(p) => run_render(st, account_id, p, bytes),
        }
    }
}

/// What a job runs: its kind (`validate` or `render`), the endpoint's
/// parameters as JSON, and what it costs.
pub struct JobSpec {
    /// `validate` or `render`.
    pub kind: &'static str,
    /// The endpoint's validated parameters, JSON.
    pub params: String,
    /// Credits charged when queued.
    pub cost: i64,
}

/// Runs a queued validation and stores its report. SPEC-001's validator
/// reads the input from a file, so that the bytes are freed once loaded
/// ([`crate::engine::validate_stored_with_stills`]): the blob's own file, or,
/// where the blob store keeps none (a bucket), a copy written to the data
/// folder's `spill/` and deleted when the job ends. Should the copy fail
/// (a full disk), the bytes are held for the validator as before.
fn run_validate(
    st: &AppState,
    account_id: &str,
    params: &ValidateParams,
    bytes: Vec<u8>,
    file: Option<&Path>,
) -> crate::error::Result<String> {
    let mut opts = params.options(st.validator.clone())?;
    opts.drawer = st.drawer.clone();
    let spilled = match file {
        None if opts.runs_validator() => match Spilled::write(&st.config.data_dir.join(SPILL_DIR), &bytes) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::warn!(error = %e, "could not copy a job's input to disk; the validator takes its bytes");
                None
            }
        },
        _ => None,
    };
    let file = file.or(spilled.as_ref().map(|s| s.0.as_path()));
    let input = crate::asset::Input::from_bytes(params.filename.clone(), bytes);
    let (report, stills) = match file {
        Some(path) => crate::engine::validate_stored_with_stills(input, path, &opts)?,
        None => crate::engine::validate_with_stills(input, &opts)?,
    };
    drop(spilled);
    let keep = if params.screenshots { stills.as_ref() } else { None };
    store_report(st, account_id, &random_id("rpt_", 24), report, keep, st.clock.now())
}

/// The data folder's folder for copies of job inputs (`Spilled`).
pub const SPILL_DIR: &str = "spill";

/// A job's input copied to a file of its own, deleted when dropped.
struct Spilled(PathBuf);

impl Spilled {
    fn write(dir: &Path, bytes: &[u8]) -> std::io::Result<Spilled> {
        use std::io::Write;
        std::fs::create_dir_all(dir)?;
        let path = dir.join(random_id("input_", 24));
        let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
        let spilled = Spilled(path);
        file.write_all(bytes)?;
        Ok(spilled)
    }
}

/// Deletes what a crash left in the data folder's `spill/`: the copies
/// older than [`crate::store::ORPHAN_MARGIN_S`] (no job runs that long).
/// Returns how many went.
pub fn sweep_spill(st: &AppState) -> usize {
    let Ok(entries) = std::fs::read_dir(st.config.data_dir.join(SPILL_DIR)) else { return 0 };
    let before = std::time::SystemTime::now() - std::time::Duration::from_secs(crate::store::ORPHAN_MARGIN_S as u64);
    let mut swept = 0;
    for entry in entries.flatten() {
        let old = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < before);
        if old && std::fs::remove_file(entry.path()).is_ok() {
            swept += 1;
        }
    }
    if swept > 0 {
        tracing::warn!(swept, "deleted copies of job inputs a crash left behind");
    }
    swept
}

impl Drop for Spilled {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Renders, stores the stills, the GIF and the report; returns the report's JSON.
pub fn render_and_store(
    st: &AppState,
    account_id: &str,
    render_id: &str,
    params: &RenderParams,
    job: &RenderJob,
    bytes: Vec<u8>,
    gate: &dyn Fn() -> crate::error::Result<()>,
) -> crate::error::Result<String> {
    let input = crate::asset::Input::from_bytes(params.filename.clone(), bytes);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::engine::render_gated(input, job, &st.drawer, gate)
    }))
    .unwrap_or_else(|_| Err(Error::internal("the renderer panicked")))?;
    let now = st.clock.now();
    let expires = now + st.config.report_ttl_s;
    let owner = Owner { id: render_id, account_id, now, expires_at: expires };
    let mut report = out.report;
    report.render_id = Some(render_id.to_string());
    report.expires_at = Some(rfc3339(expires));
    let stored = (|| {
        let shots = media::store_stills(st, &owner, &out.stills)?;
        for (entry, shot) in report.screenshots.iter_mut().zip(&shots) {
            entry.url = Some(media::url(st, shot));
        }
        if let (Some(gif), Some(tt)) = (&out.gif, report.turntable.as_mut()) {
            let shot = media::store_gif(st, &owner, gif, TURNTABLE_ELEVATION, tt.size)?;
            tt.url = Some(media::url(st, &shot));
        }
        let body = serde_json::to_string(&report).map_err(|e| Error::internal(e.to_string()))?;
        st.store.put_report(render_id, account_id, now, expires, &body)?;
        Ok(body)
    })();
    if stored.is_err() {
        media::delete_owner(st, render_id);
    }
    stored
}

/// Runs a queued render (charged when it was queued).
fn run_render(st: &AppState, account_id: &str, params: &RenderParams, bytes: Vec<u8>) -> crate::error::Result<String> {
    let job = params.job()?;
    render_and_store(st, account_id, &crate::store::random_id("rnd_", 24), params, &job, bytes, &|| Ok(()))
}
