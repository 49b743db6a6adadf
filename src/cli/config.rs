//! `meshcheck.toml`: the file's model (and from it the JSON Schema in
//! schemas/meshcheck-toml.json), finding it, and resolving one input's
//! settings with where each came from.
//!
//! Each input's settings are layered: the defaults, the config file's top
//! level, its `[[rules]]` whose `paths` match the input (in file order), and
//! last the flags the user gave. The config file is the first
//! `meshcheck.toml` found walking up from the input's folder; the walk stops
//! at the filesystem root or after a folder holding `.git` (the repository
//! root), so a checkout behaves the same on every machine. `--config FILE`
//! names one file for every input; `--no-config` reads none. A file is
//! checked whole when it is read: an unknown key, a wrong type, an unknown
//! profile, override key or check ID, or a bad glob anywhere in it is a
//! usage error (exit 2) naming the file, the rule and the valid values.
//! docs/config.md describes the file for users.

use crate::checks::catalog;
use crate::engine::{Options, Selection};
use crate::error::{Error, Result};
use crate::profile::{BUILTIN_NAMES, Profile};
use crate::report::Mode;
use clap::{Args, ValueEnum};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// The config file's name.
pub const FILE_NAME: &str = "meshcheck.toml";

/// The keys a layer (the top level or a rule) may set, in the order the
/// docs, errors and `meshcheck config` list them.
pub const SETTING_KEYS: &[&str] = &["profile", "overrides", "only", "skip", "fail_on", "mode", "weld_tolerance"];

/// `--fail-on` levels (and the file's `fail_on`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FailOn {
    /// Exit 1 when a report's verdict is fail (the default).
    Fail,
    /// Exit 1 when a report's verdict is warn or fail.
    Warn,
}

impl FailOn {
    /// The name, as in the file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            FailOn::Fail => "fail",
            FailOn::Warn => "warn",
        }
    }
}

/// `--mode` values, as on the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Measurements only; RND checks are skipped.
    #[value(name = "checks_only")]
    ChecksOnly,
    /// Measurements plus the renderer.
    #[value(name = "full")]
    Full,
}

impl From<Mode> for ModeArg {
    fn from(m: Mode) -> ModeArg {
        match m {
            Mode::ChecksOnly => ModeArg::ChecksOnly,
            Mode::Full => ModeArg::Full,
        }
    }
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::ChecksOnly => Mode::ChecksOnly,
            ModeArg::Full => Mode::Full,
        }
    }
}

/// The flags that decide how an input is validated, shared by `validate`,
/// `config` and `compare`. Each is optional, so a flag the user did not give
/// leaves the config file's value in force.
#[derive(Debug, Clone, Default, Args)]
pub struct EngineFlags {
    /// Budget profile: web, mobile, pc, hero, or a path to a .toml file
    /// [default: meshcheck.toml's, else web].
    #[arg(long, value_name = "NAME|FILE.toml")]
    pub profile: Option<String>,
    /// Replace one budget (repeatable): max_tris, max_verts, max_texture_dim,
    /// max_texture_mem, max_materials, max_draw_calls, max_file_bytes,
    /// min_extent, max_extent.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Weld tolerance for geometry checks, in metres [default: the profile's, 1e-5].
    #[arg(long, value_name = "METRES")]
    pub weld_tolerance: Option<f64>,
    /// Run only these checks or families (IDs such as PERF-001, or PERF, or performance).
    #[arg(long, value_delimiter = ',', value_name = "ID|FAMILY,...")]
    pub only: Vec<String>,
    /// Skip these checks or families; they report `skipped` ("not selected").
    #[arg(long, value_delimiter = ',', value_name = "ID|FAMILY,...")]
    pub skip: Vec<String>,
    /// checks_only, or full (needs the renderer) [default: meshcheck.toml's, else checks_only].
    #[arg(long, value_enum)]
    pub mode: Option<ModeArg>,
    /// Read the settings of every input from this file instead of the
    /// meshcheck.toml found above each input (docs/config.md).
    #[arg(long, value_name = "FILE", conflicts_with = "no_config")]
    pub config: Option<PathBuf>,
    /// Read no meshcheck.toml: defaults and flags only.
    #[arg(long)]
    pub no_config: bool,
}

/// The flags that decide an input's settings, shared by `validate` and
/// `config`: the engine's, and the exit level.
#[derive(Debug, Clone, Default, Args)]
pub struct SettingFlags {
    /// How the input is validated.
    #[command(flatten)]
    pub engine: EngineFlags,
    /// Exit 1 on this verdict or worse [default: meshcheck.toml's, else fail].
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub fail_on: Option<FailOn>,
}

impl From<EngineFlags> for SettingFlags {
    fn from(engine: EngineFlags) -> SettingFlags {
        SettingFlags { engine, fail_on: None }
    }
}

/// Budgets to replace: a table of budget key = number, in file order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides(pub Vec<(String, f64)>);

impl<'de> Deserialize<'de> for Overrides {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Overrides;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a table of budget keys and numbers, such as { max_tris = 50000 }")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Overrides, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, f64>()? {
                    out.push((k, v));
                }
                Ok(Overrides(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

impl JsonSchema for Overrides {
    fn schema_name() -> Cow<'static, str> {
        "Overrides".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let keys = catalog::default_profile().override_keys();
        json_schema!({
            "description": "Budgets to replace, key = number (the keys `--override` accepts). Later layers replace a key, others stay.",
            "type": "object",
            "propertyNames": { "enum": keys },
            "additionalProperties": { "type": "number", "minimum": 0 }
        })
    }
}

fn profile_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Budget profile: a built-in name, or a profile .toml file (a path relative to this file's folder).",
        "anyOf": [
            { "enum": BUILTIN_NAMES },
            { "type": "string", "pattern": "(\\.toml$)|/" }
        ]
    })
}

/// The settings one layer may give: the file's top level or a rule. A key
/// left out leaves the value of the layer below. (The file is only read:
/// `skip_serializing_if` keeps `"default": null` out of the JSON Schema, and
/// `with` describes each key by its value's type, never as nullable.)
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
pub struct Settings {
    /// Budget profile: a built-in name (web, mobile, pc, hero), or a profile
    /// .toml file, relative to this file's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "profile_schema")]
    pub profile: Option<String>,
    /// Budgets to replace, key = number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Overrides")]
    pub overrides: Option<Overrides>,
    /// Run only these checks or families (IDs such as PERF-001, a family
    /// prefix such as PERF, or a category such as performance).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub only: Option<Vec<String>>,
    /// Skip these checks or families; they report `skipped` ("not selected").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub skip: Option<Vec<String>>,
    /// Exit 1 on this verdict or worse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "FailOn")]
    pub fail_on: Option<FailOn>,
    /// checks_only, or full (needs the renderer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Mode")]
    pub mode: Option<Mode>,
    /// Weld tolerance for the geometry checks, in metres (at most 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64", range(min = 0.0, max = 1.0))]
    pub weld_tolerance: Option<f64>,
}

/// Settings for the inputs whose path matches one of `paths`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Rule {
    /// Globs relative to the config file's folder, matched against the
    /// input's path with `/` between folders: `*` stays within a folder,
    /// `**` crosses folders (`hero/**`, `**/*.zip`).
    #[schemars(length(min = 1))]
    pub paths: Vec<String>,
    /// The settings this rule gives.
    #[serde(flatten)]
    pub settings: Settings,
}

/// `meshcheck.toml`: settings for the assets under its folder. The top
/// level applies to every input; then each `[[rules]]` entry whose `paths`
/// match, in file order; then the flags given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[schemars(title = "meshcheck.toml", deny_unknown_fields)]
pub struct ConfigFile {
    /// The settings for every input.
    #[serde(flatten)]
    pub settings: Settings,
    /// Settings for some paths, applied in order after the top level (a later
    /// rule wins over an earlier one for the keys both set).
    #[serde(default)]
    pub rules: Vec<Rule>,
}

/// Where a setting came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Origin {
    /// Nobody set it.
    Default,
    /// A config file: its top level, or its `rule`-th `[[rules]]` entry
    /// (counting from 1).
    Config {
        /// The file, relative to the working directory when under it.
        path: String,
        /// The rule, counting from 1; absent for the top level.
        #[serde(skip_serializing_if = "Option::is_none")]
        rule: Option<usize>,
    },
    /// A command-line flag.
    Flag {
        /// The flag, such as `--profile`.
        flag: &'static str,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Config { path, rule: None } => f.write_str(path),
            Origin::Config { path, rule: Some(n) } => write!(f, "{path} [[rules]] {n}"),
            Origin::Flag { flag } => write!(f, "flag {flag}"),
        }
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sourced<T> {
    /// The value in force.
    pub value: T,
    /// Who set it.
    pub from: Origin,
}

fn default<T>(value: T) -> Sourced<T> {
    Sourced { value, from: Origin::Default }
}

/// The settings in force for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The config file read for it, if any.
    pub config: Option<String>,
    /// The rules that matched it, counting from 1.
    pub rules: Vec<usize>,
    /// The profile: a built-in name or a profile file's path.
    pub profile: Sourced<String>,
    /// Budgets replaced, in the order they were applied.
    pub overrides: Vec<(String, Sourced<f64>)>,
    /// `only` (empty: every check).
    pub only: Sourced<Vec<String>>,
    /// `skip`.
    pub skip: Sourced<Vec<String>>,
    /// The exit level.
    pub fail_on: Sourced<FailOn>,
    /// The mode.
    pub mode: Sourced<Mode>,
    /// The weld tolerance; `None` keeps the profile's.
    pub weld_tolerance: Sourced<Option<f64>>,
}

/// What decides a report besides the asset: inputs with equal engine
/// settings share one [`Options`].
#[derive(Debug, Clone, PartialEq)]
pub struct EngineSettings {
    /// The profile's name or path.
    pub profile: String,
    /// Budgets replaced, in order.
    pub overrides: Vec<(String, f64)>,
    /// The weld tolerance, when set.
    pub weld_tolerance: Option<f64>,
    /// `only`.
    pub only: Vec<String>,
    /// `skip`.
    pub skip: Vec<String>,
    /// The mode.
    pub mode: Mode,
}

impl Resolved {
    fn defaults() -> Resolved {
        Resolved {
            config: None,
            rules: Vec::new(),
            profile: default(BUILTIN_NAMES[0].to_string()),
            overrides: Vec::new(),
            only: default(Vec::new()),
            skip: default(Vec::new()),
            fail_on: default(FailOn::Fail),
            mode: default(Mode::ChecksOnly),
            weld_tolerance: default(None),
        }
    }

    fn set_override(&mut self, key: &str, value: f64, from: Origin) {
        self.overrides.retain(|(k, _)| k != key);
        self.overrides.push((key.to_string(), Sourced { value, from }));
    }

    /// Lays one config layer (top level or rule) over these settings.
    fn apply(&mut self, s: &Settings, dir: &Path, cwd: &Path, from: Origin) {
        if let Some(p) = &s.profile {
            self.profile = Sourced { value: profile_ref(p, dir, cwd), from: from.clone() };
        }
        for (k, v) in s.overrides.iter().flat_map(|o| &o.0) {
            self.set_override(k, *v, from.clone());
        }
        if let Some(v) = &s.only {
            self.only = Sourced { value: v.clone(), from: from.clone() };
        }
        if let Some(v) = &s.skip {
            self.skip = Sourced { value: v.clone(), from: from.clone() };
        }
        if let Some(v) = s.fail_on {
            self.fail_on = Sourced { value: v, from: from.clone() };
        }
        if let Some(v) = s.mode {
            self.mode = Sourced { value: v, from: from.clone() };
        }
        if let Some(v) = s.weld_tolerance {
            self.weld_tolerance = Sourced { value: Some(v), from };
        }
    }

    /// Lays the flags the user gave over these settings.
    fn apply_flags(&mut self, flags: &SettingFlags, overrides: &[(String, f64)]) {
        let flag = |flag| Origin::Flag { flag };
        let fail_on = flags.fail_on;
        let flags = &flags.engine;
        if let Some(p) = &flags.profile {
            self.profile = Sourced { value: p.clone(), from: flag("--profile") };
        }
        for (k, v) in overrides {
            self.set_override(k, *v, flag("--override"));
        }
        if !flags.only.is_empty() {
            self.only = Sourced { value: flags.only.clone(), from: flag("--only") };
        }
        if !flags.skip.is_empty() {
            self.skip = Sourced { value: flags.skip.clone(), from: flag("--skip") };
        }
        if let Some(v) = fail_on {
            self.fail_on = Sourced { value: v, from: flag("--fail-on") };
        }
        if let Some(v) = flags.mode {
            self.mode = Sourced { value: v.into(), from: flag("--mode") };
        }
        if let Some(v) = flags.weld_tolerance {
            self.weld_tolerance = Sourced { value: Some(v), from: flag("--weld-tolerance") };
        }
    }

    /// The part of these settings the engine sees.
    pub fn engine(&self) -> EngineSettings {
        EngineSettings {
            profile: self.profile.value.clone(),
            overrides: self.overrides.iter().map(|(k, v)| (k.clone(), v.value)).collect(),
            weld_tolerance: self.weld_tolerance.value,
            only: self.only.value.clone(),
            skip: self.skip.value.clone(),
            mode: self.mode.value,
        }
    }
}

/// The engine options of a run: one [`Options`] per distinct set of
/// settings, and for each input the index of its options and its `fail_on`.
pub struct Plan {
    /// The distinct options.
    pub options: Vec<Options>,
    /// Per input, in input order: its options and its exit level.
    pub inputs: Vec<(usize, FailOn)>,
}

/// A config file, read and checked.
#[derive(Debug)]
pub struct Loaded {
    /// Where it is (absolute).
    pub path: PathBuf,
    /// Its folder: profile paths and rule globs are relative to it.
    pub dir: PathBuf,
    /// What it says.
    pub file: ConfigFile,
    /// Each rule's globs, compiled.
    globs: Vec<GlobSet>,
}

impl Loaded {
    /// Whether rule `i` (counting from 0) matches the input at `abs`
    /// (absolute, normalised). An input outside the file's folder matches no rule.
    fn matches(&self, i: usize, abs: &Path) -> bool {
        abs.strip_prefix(&self.dir).is_ok_and(|rel| self.globs[i].is_match(rel))
    }
}

/// Which config files are read.
enum Lookup {
    /// The first meshcheck.toml walking up from each input's folder.
    Discover,
    /// One file for every input (`--config`).
    Fixed(Arc<Loaded>),
    /// None (`--no-config`).
    Off,
}

/// Finds, reads and checks config files (each once) and resolves inputs'
/// settings; builds engine options (each profile read once).
pub struct Resolver {
    cwd: PathBuf,
    flags: SettingFlags,
    flag_overrides: Vec<(String, f64)>,
    lookup: Lookup,
    /// Folder → the config file that applies to inputs in it.
    found: HashMap<PathBuf, Option<Arc<Loaded>>>,
    /// Profile name or path → the profile, read once.
    profiles: HashMap<String, Profile>,
}

impl Resolver {
    /// A resolver for the given flags: reads `--config`'s file at once.
    pub fn new(flags: &SettingFlags) -> Result<Resolver> {
        let cwd =
            std::env::current_dir().map_err(|e| Error::internal(format!("cannot read the current directory: {e}")))?;
        // The flags' own errors, as before config files existed.
        let mut scratch = catalog::default_profile();
        let mut flag_overrides = Vec::new();
        for o in &flags.engine.overrides {
            scratch.apply_override_str(o)?;
            let (k, v) = o.split_once('=').unwrap_or((o, ""));
            flag_overrides.push((k.trim().to_string(), v.trim().parse::<f64>().unwrap_or_default()));
        }
        let mut r = Resolver {
            cwd,
            flags: flags.clone(),
            flag_overrides,
            lookup: Lookup::Off,
            found: HashMap::new(),
            profiles: HashMap::new(),
        };
        r.lookup = match (&flags.engine.config, flags.engine.no_config) {
            (_, true) => Lookup::Off,
            (Some(path), false) => {
                let abs = absolute(&r.cwd, path);
                if !abs.is_file() {
                    return Err(Error::bad_request(format!("--config {}: no such file", path.display())));
                }
                Lookup::Fixed(Arc::new(r.load(&abs)?))
            }
            (None, false) => Lookup::Discover,
        };
        Ok(r)
    }

    /// The settings for one input (`None`: standard input, which gets the
    /// config file found from the working directory and matches no rule).
    pub fn resolve(&mut self, input: Option<&Path>) -> Result<Resolved> {
        let abs = input.map(|p| absolute(&self.cwd, p));
        let config = match &self.lookup {
            Lookup::Off => None,
            Lookup::Fixed(l) => Some(l.clone()),
            Lookup::Discover => {
                let start = abs.as_deref().and_then(Path::parent).unwrap_or(&self.cwd).to_path_buf();
                self.discover(&start)?
            }
        };
        let mut r = Resolved::defaults();
        if let Some(c) = &config {
            let path = shown(&self.cwd, &c.path);
            r.config = Some(path.clone());
            r.apply(&c.file.settings, &c.dir, &self.cwd, Origin::Config { path: path.clone(), rule: None });
            for (i, rule) in c.file.rules.iter().enumerate() {
                if abs.as_deref().is_some_and(|p| c.matches(i, p)) {
                    r.rules.push(i + 1);
                    let from = Origin::Config { path: path.clone(), rule: Some(i + 1) };
                    r.apply(&rule.settings, &c.dir, &self.cwd, from);
                }
            }
        }
        r.apply_flags(&self.flags, &self.flag_overrides);
        Ok(r)
    }

    /// Engine options for these settings (without a validator pool or a
    /// drawer, which the caller shares across all of a run's options).
    /// Errors are the flags' errors (unknown profile, override key, check).
    pub fn options(&mut self, s: &EngineSettings) -> Result<Options> {
        let mut profile = self.profile(&s.profile)?;
        for (k, v) in &s.overrides {
            profile.apply_override(k, *v)?;
        }
        if let Some(w) = s.weld_tolerance {
            crate::checks::set_weld_tolerance(&mut profile, w)?;
        }
        let selection = Selection::parse(&s.only, &s.skip)?;
        // The drawer (a field only in builds with the renderer) starts local.
        #[allow(clippy::needless_update)]
        Ok(Options { profile, mode: s.mode, selection, validator: None, watermark: None, ..Options::default() })
    }

    /// The options for each input, built once per distinct engine settings.
    pub fn plan(&mut self, inputs: &[Option<&Path>]) -> Result<Plan> {
        let mut keys: Vec<EngineSettings> = Vec::new();
        let mut options = Vec::new();
        let mut per_input = Vec::with_capacity(inputs.len());
        for input in inputs {
            let r = self.resolve(*input)?;
            let key = r.engine();
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    options.push(self.options(&key)?);
                    keys.push(key);
                    keys.len() - 1
                }
            };
            per_input.push((i, r.fail_on.value));
        }
        Ok(Plan { options, inputs: per_input })
    }

    fn profile(&mut self, name_or_path: &str) -> Result<Profile> {
        if let Some(p) = self.profiles.get(name_or_path) {
            return Ok(p.clone());
        }
        let p = catalog::profile(name_or_path)?;
        self.profiles.insert(name_or_path.to_string(), p.clone());
        Ok(p)
    }

    /// The config file for inputs in `start`: the first meshcheck.toml in it
    /// or a folder above, stopping after a folder that holds `.git`.
    fn discover(&mut self, start: &Path) -> Result<Option<Arc<Loaded>>> {
        let mut walked = Vec::new();
        let mut result = None;
        for dir in start.ancestors() {
            if let Some(known) = self.found.get(dir) {
                result = known.clone();
                break;
            }
            walked.push(dir.to_path_buf());
            let candidate = dir.join(FILE_NAME);
            if candidate.is_file() {
                result = Some(Arc::new(self.load(&candidate)?));
                break;
            }
            if dir.join(".git").exists() {
                break;
            }
        }
        for dir in walked {
            self.found.insert(dir, result.clone());
        }
        Ok(result)
    }

    /// Reads and checks a config file.
    fn load(&mut self, path: &Path) -> Result<Loaded> {
        let name = shown(&self.cwd, path);
        let fail = |msg: String| {
            Error::bad_request(format!("{name}: {msg}"))
                .with_help("docs/config.md describes meshcheck.toml; `meshcheck config PATH` shows what a file gets")
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read the config file: {e}")))?;
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| fail(format!("not valid TOML: {}", e.to_string().trim_end())))?;
        let mut rule_keys = vec!["paths"];
        rule_keys.extend_from_slice(SETTING_KEYS);
        let mut top = table;
        let rules = top.remove("rules");
        if let Some(k) = unknown_key(&top, SETTING_KEYS) {
            return Err(fail(format!(
                "unknown key `{k}`; valid keys: {}, and [[rules]] entries",
                SETTING_KEYS.join(", ")
            )));
        }
        let settings = layer(top).map_err(fail)?;
        let rules = match rules {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => items,
            Some(_) => return Err(fail("`rules` must be an array of tables: write each rule as [[rules]]".into())),
        };
        let mut file = ConfigFile { settings, rules: Vec::new() };
        for (i, rule) in rules.into_iter().enumerate() {
            let n = i + 1;
            let toml::Value::Table(mut rule) = rule else {
                return Err(fail(format!("[[rules]] {n}: a rule must be a table")));
            };
            if let Some(k) = unknown_key(&rule, &rule_keys) {
                return Err(fail(format!("[[rules]] {n}: unknown key `{k}`; valid keys: {}", rule_keys.join(", "))));
            }
            let paths = rule.remove("paths").ok_or_else(|| {
                fail(format!("[[rules]] {n}: `paths` is missing; give the globs it applies to, such as [\"hero/**\"]"))
            })?;
            let paths: Vec<String> = paths
                .try_into()
                .map_err(|e: toml::de::Error| fail(format!("[[rules]] {n}: `paths`: {}", e.message())))?;
            let settings = layer(rule).map_err(|e| fail(format!("[[rules]] {n}: {e}")))?;
            file.rules.push(Rule { paths, settings });
        }
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        let at = |rule: Option<usize>| match rule {
            None => String::new(),
            Some(n) => format!("[[rules]] {n}: "),
        };
        self.check_layer(&file.settings, &dir).map_err(|e| fail(e.message))?;
        let mut globs = Vec::new();
        for (i, rule) in file.rules.iter().enumerate() {
            let n = Some(i + 1);
            self.check_layer(&rule.settings, &dir).map_err(|e| fail(format!("{}{}", at(n), e.message)))?;
            if rule.paths.is_empty() {
                return Err(fail(format!("{}`paths` is empty; give at least one glob, such as \"hero/**\"", at(n))));
            }
            let mut set = GlobSetBuilder::new();
            for p in &rule.paths {
                let glob = GlobBuilder::new(p)
                    .literal_separator(true)
                    .build()
                    .map_err(|e| fail(format!("{}bad glob `{p}`: {}", at(n), e.kind())))?;
                set.add(glob);
            }
            globs.push(set.build().map_err(|e| fail(format!("{}bad globs: {e}", at(n))))?);
        }
        Ok(Loaded { path: path.to_path_buf(), dir, file, globs })
    }

    /// Checks one layer's values with the flags' own errors.
    fn check_layer(&mut self, s: &Settings, dir: &Path) -> Result<()> {
        let mut scratch = match &s.profile {
            Some(p) => {
                let r = profile_ref(p, dir, &self.cwd);
                self.profile(&r)?
            }
            None => self.profile(BUILTIN_NAMES[0])?,
        };
        for (k, v) in s.overrides.iter().flat_map(|o| &o.0) {
            scratch.apply_override(k, *v)?;
        }
        if let Some(w) = s.weld_tolerance {
            crate::checks::set_weld_tolerance(&mut scratch, w)?;
        }
        Selection::parse(s.only.as_deref().unwrap_or_default(), s.skip.as_deref().unwrap_or_default())?;
        Ok(())
    }
}

/// The first key of `table` not in `valid`.
fn unknown_key<'a>(table: &'a toml::Table, valid: &[&str]) -> Option<&'a str> {
    table.keys().map(String::as_str).find(|k| !valid.contains(k))
}

/// One layer's settings, or what is wrong with a value, naming its key.
fn layer(table: toml::Table) -> std::result::Result<Settings, String> {
    serde_path_to_error::deserialize(toml::Value::Table(table))
        .map_err(|e| format!("`{}`: {}", e.path(), e.inner().message()))
}

/// A profile named in a config file: a built-in name as is; anything else
/// is a file relative to the config file's folder, given to the profile
/// loader relative to the working directory when under it. A name that is
/// neither stays as written, so the loader reports it as an unknown profile.
fn profile_ref(p: &str, dir: &Path, cwd: &Path) -> String {
    let looks_like_path = p.ends_with(".toml") || p.contains(['/', '\\']);
    if BUILTIN_NAMES.contains(&p) || !looks_like_path {
        return p.to_string();
    }
    let s = shown(cwd, &absolute(dir, Path::new(p)));
    if s.ends_with(".toml") || s.contains('/') { s } else { format!("./{s}") }
}

/// `p` made absolute against `base`, with `.` and `..` resolved by name
/// (symbolic links are not followed, so an input's folder is the one its
/// path names).
pub fn absolute(base: &Path, p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(p).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// A path as shown to the user: relative to the working directory when
/// under it, else absolute.
pub fn shown(cwd: &Path, p: &Path) -> String {
    match p.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => p.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::config;

    #[test]
    fn the_schema_lists_the_keys_the_reader_accepts() {
        let v = serde_json::to_value(schemars::schema_for!(ConfigFile)).unwrap();
        let top: Vec<&str> = v["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = SETTING_KEYS.to_vec();
        want.push("rules");
        assert_eq!(top, want);
        assert_eq!(v["additionalProperties"], false);
        let rule = &v["$defs"]["Rule"];
        let keys: Vec<&str> = rule["properties"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys[0], "paths");
        assert_eq!(&keys[1..], SETTING_KEYS);
        assert_eq!(rule["additionalProperties"], false);
    }

    #[test]
    fn paths_are_normalised_by_name() {
        let cwd = Path::new("/a/b");
        assert_eq!(absolute(cwd, Path::new("../c/./d.glb")), PathBuf::from("/a/c/d.glb"));
        assert_eq!(absolute(cwd, Path::new("/x/y")), PathBuf::from("/x/y"));
        assert_eq!(shown(cwd, Path::new("/a/b/c/m.toml")), "c/m.toml");
        assert_eq!(shown(cwd, Path::new("/z/m.toml")), "/z/m.toml");
        assert_eq!(profile_ref("hero", Path::new("/a/b/c"), cwd), "hero");
        assert_eq!(profile_ref("budgets/x.toml", Path::new("/a/b/c"), cwd), "c/budgets/x.toml");
        assert_eq!(profile_ref("x.toml", Path::new("/q"), cwd), "/q/x.toml");
        assert_eq!(profile_ref("console", Path::new("/q"), cwd), "console");
    }

    #[test]
    fn overrides_keep_file_order_and_later_layers_win() {
        let f: ConfigFile = toml::from_str(
            "profile = \"pc\"\noverrides = { max_verts = 9, max_tris = 5 }\n[[rules]]\npaths = [\"a/**\"]\noverrides = { max_verts = 7 }\nfail_on = \"warn\"\n",
        )
        .unwrap();
        assert_eq!(f.settings.overrides.as_ref().unwrap().0, vec![("max_verts".into(), 9.0), ("max_tris".into(), 5.0)]);
        let mut r = Resolved::defaults();
        let dir = Path::new("/p");
        r.apply(&f.settings, dir, dir, Origin::Config { path: "m.toml".into(), rule: None });
        r.apply(&f.rules[0].settings, dir, dir, Origin::Config { path: "m.toml".into(), rule: Some(1) });
        let e = r.engine();
        assert_eq!(e.profile, "pc");
        assert_eq!(e.overrides, vec![("max_tris".into(), 5.0), ("max_verts".into(), 7.0)]);
        assert_eq!(r.fail_on.value, FailOn::Warn);
        assert_eq!(r.fail_on.from.to_string(), "m.toml [[rules]] 1");
        assert_eq!(r.mode.from, Origin::Default);
    }

    #[test]
    fn a_run_builds_one_options_per_distinct_settings_and_reads_each_file_once() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(
            root.join(FILE_NAME),
            "[[rules]]\npaths = [\"hero/**\"]\nprofile = \"hero\"\nfail_on = \"warn\"\n",
        )
        .unwrap();
        let files: Vec<PathBuf> = (0..400)
            .map(|i| root.join(if i % 4 == 0 { format!("hero/h{i}.glb") } else { format!("props/p{i}.glb") }))
            .collect();
        let inputs: Vec<Option<&Path>> = files.iter().map(|f| Some(f.as_path())).collect();
        let mut r = Resolver::new(&SettingFlags::default()).unwrap();
        let config::Plan { options, inputs: per_input } = r.plan(&inputs).unwrap();
        assert_eq!(options.len(), 2);
        assert_eq!(options[per_input[0].0].profile.name, "hero");
        assert_eq!(per_input[0].1, FailOn::Warn);
        assert_eq!(options[per_input[1].0].profile.name, "web");
        assert_eq!(per_input[1].1, FailOn::Fail);
        // Two folders and those above them were walked; one file was read.
        let read: Vec<_> = r.found.values().flatten().map(Arc::as_ptr).collect();
        assert!(read.windows(2).all(|w| w[0] == w[1]), "one Loaded shared by every folder");
        assert!(r.found.contains_key(&root.join("hero")) && r.found.contains_key(&root.join("props")));
        // Each profile was read once.
        assert_eq!(r.profiles.len(), 2);
    }
}
