//! `meshcheck mcp`: meshcheck's tools for agents over the Model Context
//! Protocol on stdio, served with the official Rust SDK (`rmcp`).
//!
//! - Tools: `validate`, `compare` and `checks` in every build with the
//!   `mcp` feature, `render` with the renderer, `inspect` with the renderer
//!   and the vision client. docs/mcp.md documents their inputs and outputs.
//!   `validate` and `compare` take `validate`'s setting flags as arguments
//!   ([`SettingsInput`]) and read meshcheck.toml as the CLI does.
//! - A tool's input is one struct (its JSON Schema comes from schemars) and
//!   its work one blocking function from that struct to an `Answer`: the
//!   JSON exactly as the matching CLI command prints it (as text; as
//!   structured content always an object, so an array is wrapped) and any
//!   images. Adding a tool is an input struct, a work function and a
//!   three-line `#[tool]` method that hands both to `Server::run`.
//! - The work runs on tokio's blocking threads, never on the protocol's. An
//!   error of the work (an unreadable file, an unknown profile, a bad
//!   argument) is a tool error, `isError: true`, carrying the
//!   specification's error envelope `{"error": {code, message, detail,
//!   help}}`; a panic is INTERNAL. The server keeps running either way.
//! - The server lives as long as its client, like `meshcheck serve`, so it
//!   draws in a render worker process that is replaced before it grows (the
//!   limits of a CLI folder run), and SPEC-001 uses the process-wide
//!   validator pool, started on the first call that needs it.
//! - Standard input and output carry the protocol: `-` is refused as a path,
//!   and nothing here prints.

use super::config::{EngineFlags, ModeArg, Plan, Resolver, SettingFlags};
use super::output::{self, FileResult, Job};
use super::{catalog_cmd, compare, compare_cmd, validate};
use crate::engine::Options;
use crate::error::{Error, Result};
use crate::report::Mode;
use base64::Engine as _;
use clap::Args;
use rayon::prelude::*;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Arguments of `meshcheck mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Folder that relative paths in tool calls resolve against [default:
    /// the current directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// What the server tells a client when the session starts.
const INSTRUCTIONS: &str = "meshcheck validates glTF 2.0 assets (.glb, .gltf with its resources, .zip bundles) \
    against a budget profile and the Khronos glTF-Validator and answers with a report card: a pass/warn/fail \
    verdict and, per check, its status with measured and threshold values. Paths name files on the machine the \
    server runs on; relative paths resolve against the server's working directory. Call `checks` for what each \
    check measures and its thresholds under a profile.";

/// Runs `meshcheck mcp` until the client closes the session (its end of
/// standard input).
pub fn run(args: McpArgs) -> Result<i32> {
    if let Some(dir) = &args.dir {
        std::env::set_current_dir(dir)
            .map_err(|e| Error::bad_request(format!("cannot change into the folder {}: {e}", dir.display())))?;
    }
    let server = Server::new()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the async runtime: {e}")))?;
    let outcome = runtime.block_on(async move {
        let session = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| Error::internal(format!("the MCP session did not start: {e}")))?;
        session.waiting().await.map_err(|e| Error::internal(format!("the MCP session failed: {e}")))
    });
    // A tool still working for a client that has gone is not waited for.
    runtime.shutdown_background();
    outcome.map(|_| 0)
}

/// What every tool's work may use, shared by the calls of one session.
struct Shared {
    /// Where stills are drawn: a replaceable worker process.
    #[cfg(feature = "render")]
    drawer: crate::render::Drawer,
}

impl Shared {
    fn new() -> Result<Shared> {
        #[cfg(feature = "render")]
        {
            let exe = std::env::current_exe().map_err(|e| {
                Error::internal(format!("cannot find the meshcheck executable for the render worker: {e}"))
            })?;
            let limits = crate::render::worker::Limits {
                renders: validate::CLI_WORKER_RENDERS,
                rss_bytes: validate::CLI_WORKER_RSS,
                ..crate::render::worker::Limits::default()
            };
            let workers = crate::render::worker::default_workers(crate::render::worker::cores());
            let pool = crate::render::worker::Pool::new(exe, limits, workers);
            Ok(Shared { drawer: crate::render::Drawer::Worker(Arc::new(pool)) })
        }
        #[cfg(not(feature = "render"))]
        Ok(Shared {})
    }
}

/// A tool's successful answer.
struct Answer {
    /// The text content: the JSON as the matching CLI command prints it.
    text: String,
    /// The structured content (an object).
    structured: Value,
    /// Image content: MIME type and bytes.
    images: Vec<(&'static str, Vec<u8>)>,
}

impl Answer {
    /// An answer whose text is `value` pretty-printed, as the CLI prints it.
    fn json(value: Value) -> Answer {
        let text = format!("{}\n", pretty(&value));
        Answer { text, structured: value, images: Vec::new() }
    }

    fn into_result(self) -> CallToolResult {
        let mut content = vec![ContentBlock::text(self.text)];
        for (mime, bytes) in self.images {
            content.push(ContentBlock::image(base64::engine::general_purpose::STANDARD.encode(bytes), mime));
        }
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(self.structured);
        result
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// A tool error: the specification's error envelope, with the hint the CLI
/// prints under it (`help`) when there is one, as structured content and
/// as text.
pub fn tool_error(e: &Error) -> CallToolResult {
    let mut envelope = e.envelope();
    if let (Some(help), Some(inner)) = (&e.help, envelope.get_mut("error").and_then(Value::as_object_mut)) {
        inner.insert("help".into(), Value::String(help.clone()));
    }
    let text = format!("{}\n", pretty(&envelope));
    let mut result = CallToolResult::structured_error(envelope);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Reads a tool's arguments into its input struct; a missing, unknown or
/// mistyped argument is BAD_REQUEST naming it. Unknown arguments are found
/// against the input's schema, so inputs that share fields by
/// `#[serde(flatten)]` refuse them too.
fn parse<T: DeserializeOwned + JsonSchema + 'static>(args: JsonObject) -> Result<T> {
    let own = schema::<T>();
    let known: Vec<&String> =
        own.get("properties").and_then(Value::as_object).into_iter().flatten().map(|(k, _)| k).collect();
    if let Some(field) = args.keys().find(|k| !known.contains(k)) {
        let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
        return Err(Error::bad_request(format!(
            "invalid arguments: unknown field `{field}`, expected one of {}",
            expected.join(", ")
        ))
        .with_detail(json!({"field": field, "reason": "unknown"})));
    }
    let setting_keys = schema::<SettingsInput>();
    let is_setting =
        |k: &String| setting_keys.get("properties").and_then(Value::as_object).is_some_and(|p| p.contains_key(k));
    let settings: JsonObject =
        args.iter().filter(|(k, _)| is_setting(k)).map(|(k, v)| (k.clone(), v.clone())).collect();
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let mut field = e.path().to_string();
        if field == "." {
            // A flattened field's error carries no path (serde reads flattened
            // fields from a buffer): read the settings alone to find it.
            if let Err(inner) = serde_path_to_error::deserialize::<_, SettingsInput>(Value::Object(settings)) {
                field = inner.path().to_string();
            }
        }
        let err = Error::bad_request(format!("invalid arguments: {e}"));
        if field == "." { err } else { err.with_detail(json!({"field": field, "reason": "invalid"})) }
    })
}

/// A tool's input schema (draft 2020-12, as MCP asks): an object that
/// allows no property it does not list.
fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    let mut schema = rmcp::handler::server::common::schema_for_input::<T>()
        .unwrap_or_else(|e| panic!("the input schema of {} is not an object: {e}", std::any::type_name::<T>()));
    Arc::make_mut(&mut schema).insert("additionalProperties".into(), Value::Bool(false));
    schema
}

/// A path argument. `-` would read standard input, which carries the
/// protocol here.
fn path_arg(path: &str, field: &str) -> Result<PathBuf> {
    if path == "-" {
        return Err(Error::field(
            field,
            "invalid",
            "`-` (standard input) cannot be read over MCP, where standard input carries the protocol; give a file path",
        ));
    }
    if path.is_empty() {
        return Err(Error::field(field, "required", format!("`{field}` is empty")));
    }
    Ok(PathBuf::from(path))
}

/// The MCP server: the tools and what they share.
pub struct Server {
    tools: ToolRouter<Server>,
    shared: Arc<Shared>,
}

impl Server {
    /// The server with every tool this build has.
    pub fn new() -> Result<Server> {
        #[allow(unused_mut)]
        let mut tools = Server::catalog_tools();
        #[cfg(feature = "render")]
        {
            tools += Server::render_tools();
        }
        #[cfg(all(feature = "render", feature = "vision"))]
        {
            tools += Server::vision_tools();
        }
        Ok(Server { tools, shared: Arc::new(Shared::new()?) })
    }

    /// Runs one tool's work on a blocking thread: its arguments parsed into
    /// its input, then `work`; any error or panic becomes a tool error.
    async fn run<T>(&self, args: JsonObject, work: fn(T, &Shared) -> Result<Answer>) -> CallToolResult
    where
        T: DeserializeOwned + JsonSchema + Send + 'static,
    {
        let shared = self.shared.clone();
        let outcome = tokio::task::spawn_blocking(move || work(parse(args)?, &shared)).await;
        match outcome {
            Ok(Ok(answer)) => answer.into_result(),
            Ok(Err(e)) => tool_error(&e),
            Err(join) => {
                let what = match join.try_into_panic() {
                    Ok(panic) => panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default(),
                    Err(join) => join.to_string(),
                };
                tool_error(&Error::internal(format!("the tool stopped: {what}")))
            }
        }
    }
}

#[tool_handler(router = self.tools)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("meshcheck", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

// ---- validate and checks: every build ----

/// The settings a tool that validates takes: `meshcheck validate`'s
/// setting flags. As on the command line, the meshcheck.toml found above
/// each file applies, and what is given here wins over it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct SettingsInput {
    /// Budget profile: web, mobile, pc, hero, or a path to a .toml file
    /// [default: meshcheck.toml's, else web].
    #[serde(default)]
    pub profile: Option<String>,
    /// Budgets to replace, e.g. {"max_tris": 50000}: max_tris, max_verts,
    /// max_texture_dim, max_texture_mem, max_materials, max_draw_calls,
    /// max_file_bytes, min_extent, max_extent.
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, f64>")]
    pub overrides: serde_json::Map<String, Value>,
    /// Weld tolerance for the geometry checks, in metres [default:
    /// meshcheck.toml's, else the profile's, 1e-5].
    #[serde(default)]
    pub weld_tolerance: Option<f64>,
    /// Run only these checks or families (IDs such as PERF-001, prefixes
    /// such as PERF, or category names such as performance).
    #[serde(default)]
    pub only: Vec<String>,
    /// Skip these checks or families; they report `skipped` ("not selected").
    #[serde(default)]
    pub skip: Vec<String>,
    /// checks_only (measurements), or full (also renders the six standard
    /// views for the RND checks) [default: meshcheck.toml's, else checks_only].
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Read every file's settings from this meshcheck.toml instead of the
    /// one found above each file.
    #[serde(default)]
    pub config: Option<String>,
    /// Read no meshcheck.toml: defaults and these arguments only.
    #[serde(default)]
    pub no_config: bool,
}

impl SettingsInput {
    /// The arguments as `meshcheck validate`'s flags.
    fn flags(&self) -> Result<EngineFlags> {
        if self.config.is_some() && self.no_config {
            return Err(Error::field("no_config", "invalid", "`config` and `no_config` cannot both be given"));
        }
        let mut overrides = Vec::with_capacity(self.overrides.len());
        for (key, value) in &self.overrides {
            let number = value.as_f64().ok_or_else(|| {
                Error::bad_request(format!("override `{key}` needs a number, got {value}"))
                    .with_detail(json!({"field": "overrides", "reason": format!("{key} is not a number")}))
            })?;
            overrides.push(format!("{key}={number}"));
        }
        Ok(EngineFlags {
            profile: self.profile.clone(),
            overrides,
            weld_tolerance: self.weld_tolerance,
            only: self.only.clone(),
            skip: self.skip.clone(),
            mode: self.mode.map(ModeArg::from),
            config: self.config.as_deref().map(|c| path_arg(c, "config")).transpose()?,
            no_config: self.no_config,
        })
    }
}

/// Input of `validate`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ValidateInput {
    /// A .glb, .gltf or .zip file (the format is sniffed from the bytes), or
    /// a folder, walked recursively for .glb, .gltf and .zip files: then the
    /// answer is an array of reports in path order.
    pub path: String,
    /// The settings.
    #[serde(flatten)]
    pub settings: SettingsInput,
}

impl ValidateInput {
    /// Engine options for each job, as `meshcheck validate` resolves them
    /// (each distinct set of settings once), sharing the session's drawer
    /// and the process-wide validator pool.
    fn plan(&self, jobs: &[Job], _shared: &Shared) -> Result<Plan> {
        let inputs: Vec<Option<&std::path::Path>> = jobs.iter().map(|j| j.path.as_deref()).collect();
        #[allow(unused_mut)]
        let mut plan = Resolver::new(&SettingFlags::from(self.settings.flags()?))?.plan(&inputs)?;
        #[cfg(feature = "render")]
        plan.options.iter_mut().for_each(|o| o.drawer = _shared.drawer.clone());
        Ok(plan)
    }
}

/// `validate`: the report JSON exactly as `meshcheck validate --format json`
/// prints it. A file that cannot be validated is a tool error; in a folder
/// run it is an `{"error": …, "file": …}` entry of the array, as on the CLI.
fn validate_work(input: ValidateInput, shared: &Shared) -> Result<Answer> {
    let path = path_arg(&input.path, "path")?;
    let (jobs, folder) = validate::collect(std::slice::from_ref(&path))?;
    if jobs.is_empty() {
        return Err(Error::bad_request(format!("no .glb, .gltf or .zip files were found under {}", path.display())));
    }
    let plan = input.plan(&jobs, shared)?;
    // Once per call, before any file: a missing Node or graphics adapter is
    // the call's error, not every file's.
    for opts in &plan.options {
        opts.spec_validator()?;
    }
    #[cfg(feature = "render")]
    if plan.options.iter().any(Options::renders) {
        shared.drawer.ready()?;
    }
    let outcomes: Vec<FileResult> = jobs
        .par_iter()
        .zip(&plan.inputs)
        .map(|(job, (i, _))| validate::validate_job(job, &plan.options[*i], None))
        .collect();
    let single = outcomes.len() == 1 && !folder;
    if single && let Err(e) = &outcomes[0].result {
        return Err(e.clone());
    }
    let text = output::json(&outcomes, single);
    let value: Value =
        serde_json::from_str(&text).map_err(|e| Error::internal(format!("the report JSON does not read back: {e}")))?;
    let structured = if single { value } else { json!({ "reports": value }) };
    Ok(Answer { text, structured, images: Vec::new() })
}

/// Input of `compare`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompareInput {
    /// The old side: an asset (.glb, .gltf, .zip) or a report JSON file
    /// (`meshcheck validate --format json`), told apart by content.
    pub old: String,
    /// The new side, likewise.
    pub new: String,
    /// How much a budget figure (a check's gauge value such as triangles or
    /// texture memory, or a stats count) may grow before NEW is worse, in %
    /// of OLD's value [default: 0].
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub tolerance: Option<f64>,
    /// The settings asset sides are validated with; the checks compared are
    /// those NEW's settings select.
    #[serde(flatten)]
    pub settings: SettingsInput,
}

/// `compare`: the comparison as `meshcheck compare --format json` prints it
/// (`worse` is what the CLI's exit code says).
fn compare_work(input: CompareInput, shared: &Shared) -> Result<Answer> {
    let old = path_arg(&input.old, "old")?;
    let new = path_arg(&input.new, "new")?;
    let tolerance = input.tolerance.unwrap_or(0.0);
    if !(tolerance >= 0.0 && tolerance.is_finite()) {
        return Err(Error::field(
            "tolerance",
            "invalid",
            format!("`tolerance` is a percentage of 0 or more, got {tolerance}"),
        ));
    }
    let flags = input.settings.flags()?;
    // The session's validator pool and drawer, checked before any work.
    let setup = |opts: &mut compare_cmd::SideOptions| -> Result<()> {
        for o in opts.iter().flatten() {
            o.spec_validator()?;
        }
        #[cfg(feature = "render")]
        if opts.iter().flatten().any(Options::renders) {
            opts.iter_mut().flatten().for_each(|o| o.drawer = shared.drawer.clone());
            shared.drawer.ready()?;
        }
        #[cfg(not(feature = "render"))]
        let _ = shared;
        Ok(())
    };
    let (comparison, _, _) = compare_cmd::comparison(&old, &new, &flags, tolerance, &setup)?;
    let text = compare::json(&comparison);
    let structured: Value = serde_json::from_str(&text)
        .map_err(|e| Error::internal(format!("the comparison JSON does not read back: {e}")))?;
    Ok(Answer { text, structured, images: Vec::new() })
}

/// Input of `checks`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChecksInput {
    /// Show thresholds and severities under this profile: web, mobile, pc,
    /// hero, or a path to a .toml file [default: web].
    #[serde(default)]
    pub profile: Option<String>,
}

/// `checks`: the catalog as `meshcheck checks --format json` prints it.
fn checks_work(input: ChecksInput, _: &Shared) -> Result<Answer> {
    let profile = crate::checks::catalog::profile(input.profile.as_deref().unwrap_or("web"))?;
    let mut answer = Answer::json(catalog_cmd::checks_json(&profile));
    answer.structured = json!({ "profile": profile.name, "checks": answer.structured });
    Ok(answer)
}

#[tool_router(router = catalog_tools)]
impl Server {
    #[tool(
        description = "Validate a glTF 2.0 asset (.glb, .gltf, .zip) or a folder of them against a budget profile. \
            Answers the report card exactly as `meshcheck validate --format json` prints it: verdict (pass, warn, \
            fail), summary, stats and one entry per check with status, measured and threshold values and a \
            message. A folder answers an array of reports (structured content: {\"reports\": [...]}).",
        input_schema = schema::<ValidateInput>(),
        annotations(title = "Validate a glTF asset", read_only_hint = true, open_world_hint = false)
    )]
    async fn validate(&self, args: JsonObject) -> CallToolResult {
        self.run(args, validate_work).await
    }

    #[tool(
        description = "Compare two versions of a glTF asset (or two report JSON files from `meshcheck validate \
            --format json`, or one of each): per-check status changes and the deltas of measured values \
            (triangles, vertices, draw calls, materials, texture memory, file size, ...), and whether NEW is \
            worse (`worse`: a status got worse, or a budget figure grew by more than `tolerance` %), exactly as \
            `meshcheck compare --format json` prints it.",
        input_schema = schema::<CompareInput>(),
        annotations(title = "Compare two versions of an asset", read_only_hint = true, open_world_hint = false)
    )]
    async fn compare(&self, args: JsonObject) -> CallToolResult {
        self.run(args, compare_work).await
    }

    #[tool(
        description = "The check catalog under a budget profile, as `meshcheck checks --format json` prints it: \
            per check its ID, name, category, severity and thresholds (structured content: {\"profile\": name, \
            \"checks\": [...]}).",
        input_schema = schema::<ChecksInput>(),
        annotations(title = "List the checks", read_only_hint = true, open_world_hint = false)
    )]
    async fn checks(&self, args: JsonObject) -> CallToolResult {
        self.run(args, checks_work).await
    }
}

// ---- render: builds with the renderer ----

/// Input of `render`.
#[cfg(feature = "render")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RenderInput {
    /// The asset: a .glb, .gltf or .zip file.
    pub path: String,
    /// Views, 1 to 12: rv elevation -90..90, rh azimuth 0..360 around +Y from
    /// the front [default: the six standard views front, right, back, left,
    /// top, three_quarter].
    #[serde(default)]
    pub angles: Option<Vec<crate::render::Angle>>,
    /// Width and height of each still in pixels, 128 to 1024 [default: 1024].
    #[serde(default)]
    pub size: Option<u32>,
    /// Background: "#RRGGBB" or "transparent" [default: "#F2F2F2"].
    #[serde(default)]
    pub background: Option<String>,
    /// Also render a turntable GIF: frames 8..120 (default 36), size
    /// 128..1024 (default 512), format gif.
    #[serde(default)]
    pub turntable: Option<crate::report::TurntableSpec>,
    /// Also write the stills (NAME.png) and turntable.gif into this folder
    /// (created when missing); the report then lists their paths.
    #[serde(default)]
    pub out_dir: Option<String>,
    /// Return the stills (image/png) and the turntable (image/gif) as image
    /// content [default: true].
    #[serde(default = "yes")]
    pub images: bool,
}

#[cfg(feature = "render")]
fn yes() -> bool {
    true
}

/// `render`: the render report as `meshcheck render` prints it, the stills
/// as PNG image content and the turntable as a GIF.
#[cfg(feature = "render")]
fn render_work(input: RenderInput, shared: &Shared) -> Result<Answer> {
    use crate::render::{Background, Request, image_out};
    let path = path_arg(&input.path, "path")?;
    let background = match &input.background {
        Some(b) => Background::parse(b).map_err(|why| Error::field("background", "invalid", why))?,
        None => Background::default(),
    };
    let size = input.size.unwrap_or(crate::render::DEFAULT_SIZE);
    let job = crate::engine::RenderJob {
        request: Request {
            angles: input.angles.unwrap_or_else(|| Request::standard(size).angles),
            size,
            background,
            watermark: None,
        },
        turntable: input.turntable,
    };
    job.check()?;
    let file = crate::asset::Input::from_path(&path)
        .map_err(|e| Error::bad_request(format!("cannot read {}: {e}", path.display())))?;
    let mut out = crate::engine::render_gated(file, &job, &shared.drawer, &|| Ok(()))?;
    if let Some(dir) = &input.out_dir {
        super::render_cmd::write_files(&path_arg(dir, "out_dir")?, &mut out)?;
    }
    let report = serde_json::to_value(&out.report)
        .map_err(|e| Error::internal(format!("the render report does not serialise: {e}")))?;
    let mut answer = Answer::json(report);
    if input.images {
        answer.images.extend(out.stills.iter().map(|s| ("image/png", image_out::png(&s.image))));
        answer.images.extend(out.gif.map(|gif| ("image/gif", gif)));
    }
    Ok(answer)
}

#[cfg(feature = "render")]
#[tool_router(router = render_tools)]
impl Server {
    #[tool(
        description = "Render stills of a glTF asset under the studio rig (and optionally a turntable GIF). \
            Answers the render report as `meshcheck render` prints it (views, renderer, stats, notes) and the \
            stills as PNG image content in report order, then the turntable as a GIF; with out_dir the files \
            are also written there.",
        input_schema = schema::<RenderInput>(),
        annotations(
            title = "Render a glTF asset",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn render(&self, args: JsonObject) -> CallToolResult {
        self.run(args, render_work).await
    }
}

// ---- inspect: builds with the renderer and the vision client ----

/// Input of `inspect`.
#[cfg(all(feature = "render", feature = "vision"))]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InspectInput {
    /// The asset (.glb, .gltf, .zip); not needed with render_dir.
    #[serde(default)]
    pub path: Option<String>,
    /// VIS-001 (does it look like `prompt`?), VIS-002 (texture artifacts) or
    /// VIS-003 (answers `question`).
    pub check: String,
    /// What the asset should be (VIS-001), e.g. "a red office chair".
    #[serde(default)]
    pub prompt: Option<String>,
    /// The question (VIS-003).
    #[serde(default)]
    pub question: Option<String>,
    /// Reuse the stills `meshcheck render` (or the render tool's out_dir)
    /// wrote into this folder instead of rendering.
    #[serde(default)]
    pub render_dir: Option<String>,
    /// Seconds to wait for the model [default: MESHCHECK_VISION_TIMEOUT or 60].
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Do not ask for `response_format: json_schema` (providers without
    /// structured output); the reply is checked against the schema anyway.
    #[serde(default)]
    pub no_response_format: bool,
}

/// `inspect`: the answer envelope as `meshcheck inspect` prints it.
#[cfg(all(feature = "render", feature = "vision"))]
fn inspect_work(input: InspectInput, shared: &Shared) -> Result<Answer> {
    if input.path.is_none() && input.render_dir.is_none() {
        return Err(Error::field("path", "required", "give `path` (the asset) or `render_dir` (its stills)"));
    }
    let timeout = match input.timeout {
        Some(t) => {
            Some(super::values::positive_seconds(&t.to_string()).map_err(|why| Error::field("timeout", "range", why))?)
        }
        None => None,
    };
    let args = super::inspect_cmd::InspectArgs {
        file: input.path.as_deref().map(|p| path_arg(p, "path")).transpose()?,
        check: input.check,
        prompt: input.prompt,
        question: input.question,
        render_dir: input.render_dir.as_deref().map(|p| path_arg(p, "render_dir")).transpose()?,
        timeout,
        no_response_format: input.no_response_format,
    };
    let answer = super::inspect_cmd::answer(&args, &shared.drawer)?;
    let value = serde_json::to_value(&answer)
        .map_err(|e| Error::internal(format!("the inspect answer does not serialise: {e}")))?;
    Ok(Answer::json(value))
}

#[cfg(all(feature = "render", feature = "vision"))]
#[tool_router(router = vision_tools)]
impl Server {
    #[tool(
        description = "Ask a vision model about the six standard renders of a glTF asset: VIS-001 (does it look \
            like the prompt?), VIS-002 (texture artifacts) or VIS-003 (a free question). Answers the envelope \
            as `meshcheck inspect` prints it. Needs a configured model (MESHCHECK_VISION_URL and \
            MESHCHECK_VISION_MODEL in the server's environment, or ~/.config/meshcheck/config.toml); \
            otherwise the error is INSPECT_UNAVAILABLE. Not deterministic.",
        input_schema = schema::<InspectInput>(),
        annotations(title = "Ask a vision model about a glTF asset", read_only_hint = true, open_world_hint = true)
    )]
    async fn inspect(&self, args: JsonObject) -> CallToolResult {
        self.run(args, inspect_work).await
    }
}
