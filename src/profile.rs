//! Budget profiles: the thresholds and parameters every check measures against.
//!
//! The four built-in profiles live in `profiles/*.toml` and are embedded in the
//! binary. A user's own TOML file may `extends` a built-in one and change any
//! subset of its parameters or check severities. Overrides (`--override`, the
//! API's `overrides` object) may change only the nine keys the specification
//! lists; `weld_tolerance` has its own flag and request field. Every parameter
//! actually used is echoed in the report's `profile.thresholds`.

use crate::error::{Error, Result};
use crate::report::Severity;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One profile parameter: its key, unit, meaning and whether the spec lets
/// `overrides` replace it.
#[derive(Debug, Clone, Copy)]
pub struct ParamDef {
    /// The snake_case key, as in the TOML files and the report.
    pub key: &'static str,
    /// Unit, for the docs and `meshcheck profiles`.
    pub unit: &'static str,
    /// One line on what it bounds.
    pub doc: &'static str,
    /// Whether `overrides` may set it (the specification's nine keys).
    pub overridable: bool,
    /// Whether the value is a whole number (a count or a byte size).
    pub integer: bool,
}

/// Every profile parameter, in the order reports and docs list them.
pub const PARAMS: &[ParamDef] = &[
    ParamDef {
        key: "max_tris",
        unit: "triangles",
        doc: "Triangles drawn (PERF-001)",
        overridable: true,
        integer: true,
    },
    ParamDef { key: "max_verts", unit: "vertices", doc: "Vertices drawn (PERF-002)", overridable: true, integer: true },
    ParamDef {
        key: "max_texture_dim",
        unit: "px",
        doc: "Largest texture side (MAT-001)",
        overridable: true,
        integer: true,
    },
    ParamDef {
        key: "max_texture_mem",
        unit: "bytes",
        doc: "Estimated GPU texture memory (MAT-002)",
        overridable: true,
        integer: true,
    },
    ParamDef {
        key: "max_materials",
        unit: "materials",
        doc: "Materials drawn (MAT-004)",
        overridable: true,
        integer: true,
    },
    ParamDef {
        key: "max_draw_calls",
        unit: "draw calls",
        doc: "Draw-call estimate (PERF-003)",
        overridable: true,
        integer: true,
    },
    ParamDef {
        key: "max_file_bytes",
        unit: "bytes",
        doc: "Asset size as delivered (SPEC-004)",
        overridable: true,
        integer: true,
    },
    ParamDef {
        key: "min_extent",
        unit: "m",
        doc: "Smallest plausible largest side (XFM-001)",
        overridable: true,
        integer: false,
    },
    ParamDef {
        key: "max_extent",
        unit: "m",
        doc: "Largest plausible largest side (XFM-001)",
        overridable: true,
        integer: false,
    },
    ParamDef {
        key: "max_origin_offset_pct",
        unit: "% of diagonal",
        doc: "Origin distance from bottom centre or centre (XFM-002)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_scale_ratio",
        unit: "ratio",
        doc: "Largest/smallest node scale axis (XFM-003)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "weld_tolerance",
        unit: "m",
        doc: "Positions closer than this are one vertex (geometry checks)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_boundary_edges",
        unit: "edges",
        doc: "Open boundary edges allowed (GEO-002)",
        overridable: false,
        integer: true,
    },
    ParamDef {
        key: "flipped_pct",
        unit: "% of faces",
        doc: "Faces disagreeing with their shell's winding before failing (GEO-003)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_degenerate_pct",
        unit: "% of triangles",
        doc: "Degenerate triangles allowed (GEO-004)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_debris_shells",
        unit: "shells",
        doc: "Floating debris shells allowed (GEO-007)",
        overridable: false,
        integer: true,
    },
    ParamDef {
        key: "debris_max_tri_pct",
        unit: "% of triangles",
        doc: "Largest shell that can count as debris (GEO-007)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "debris_min_gap_pct",
        unit: "% of diagonal",
        doc: "Smallest gap from the main shell for debris (GEO-007)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_uv_overlap_pct",
        unit: "% of covered texels",
        doc: "UV overlap allowed (UV-002)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_stretch_ratio",
        unit: "ratio",
        doc: "Singular-value ratio above which a triangle is stretched (UV-004)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "max_stretched_area_pct",
        unit: "% of area",
        doc: "Stretched surface allowed (UV-004)",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "min_padding_px",
        unit: "px",
        doc: "Smallest gap between UV islands (UV-005)",
        overridable: false,
        integer: true,
    },
    ParamDef {
        key: "min_coverage_pct",
        unit: "% of frame",
        doc: "Mean silhouette coverage of the standard views below which RND-003 warns",
        overridable: false,
        integer: false,
    },
    ParamDef {
        key: "hard_angle_deg",
        unit: "degrees",
        doc: "Face-normal angle from which an edge is hard (TOP-004)",
        overridable: false,
        integer: false,
    },
];

/// Names of the built-in profiles, default first.
pub const BUILTIN_NAMES: &[&str] = &["web", "mobile", "pc", "hero"];

fn builtin_text(name: &str) -> Option<&'static str> {
    Some(match name {
        "web" => include_str!("../profiles/web.toml"),
        "mobile" => include_str!("../profiles/mobile.toml"),
        "pc" => include_str!("../profiles/pc.toml"),
        "hero" => include_str!("../profiles/hero.toml"),
        _ => return None,
    })
}

/// The keys `overrides` accepts, in catalog order.
pub fn override_keys() -> Vec<&'static str> {
    PARAMS.iter().filter(|p| p.overridable).map(|p| p.key).collect()
}

fn param_index(key: &str) -> Option<usize> {
    PARAMS.iter().position(|p| p.key == key)
}

/// A resolved profile: every parameter has a value.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile's name (a built-in name, or the name in the user's file).
    pub name: String,
    /// One line on what it is for.
    pub description: String,
    values: Vec<f64>,
    /// Per-check severity changes made by a custom profile.
    pub severities: BTreeMap<String, Severity>,
    /// The overrides applied, in the order given.
    pub overrides: Vec<(String, f64)>,
}

impl Profile {
    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Result<Profile> {
        let text = builtin_text(name).ok_or_else(|| unknown_profile(name))?;
        // The built-in profiles change no severities, so no check IDs are needed.
        Profile::from_toml(text, name, &[])
    }

    /// The default profile, `web`.
    pub fn default_profile() -> Profile {
        Profile::builtin("web").expect("the embedded web profile parses")
    }

    /// A built-in name, or a path to a TOML file (anything ending in `.toml`
    /// or containing a path separator). `checks` are the check IDs a
    /// `[severity]` table may name (the catalog's, given by the caller:
    /// budgets sit below the checks and do not know them).
    pub fn load(name_or_path: &str, checks: &[&str]) -> Result<Profile> {
        if builtin_text(name_or_path).is_some() {
            return Profile::builtin(name_or_path);
        }
        let looks_like_path = name_or_path.ends_with(".toml") || name_or_path.contains(['/', '\\']);
        if !looks_like_path {
            return Err(unknown_profile(name_or_path));
        }
        let text = std::fs::read_to_string(name_or_path).map_err(|e| {
            Error::bad_request(format!("cannot read profile file {name_or_path}: {e}"))
                .with_detail(serde_json::json!({"field": "profile", "reason": e.to_string()}))
        })?;
        Profile::from_toml(&text, name_or_path, checks)
    }

    /// Parses a profile file. A file may `extends = "NAME"` (default `web`) and
    /// then give any subset of `[thresholds]` and `[severity]`; `[severity]`
    /// may name only the IDs in `checks`.
    pub fn from_toml(text: &str, source: &str, checks: &[&str]) -> Result<Profile> {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            Error::bad_request(format!("profile {source} is not valid TOML: {}", e.message()))
                .with_detail(serde_json::json!({"field": "profile", "reason": e.message()}))
        })?;
        let mut name = None;
        let mut description = None;
        let mut extends = None;
        let mut thresholds = toml::Table::new();
        let mut severity = toml::Table::new();
        for (k, v) in table {
            match (k.as_str(), v) {
                ("name", toml::Value::String(s)) => name = Some(s),
                ("description", toml::Value::String(s)) => description = Some(s),
                ("extends", toml::Value::String(s)) => extends = Some(s),
                ("thresholds", toml::Value::Table(t)) => thresholds = t,
                ("severity", toml::Value::Table(t)) => severity = t,
                (other, _) => {
                    return Err(Error::bad_request(format!(
                        "profile {source}: unknown or mistyped top-level key `{other}`; expected name, description, extends, [thresholds], [severity]"
                    )));
                }
            }
        }
        let mut profile = match extends.as_deref() {
            Some(base) => Profile::builtin(base)?,
            None if builtin_text(source).is_some() => Profile {
                name: source.to_string(),
                description: String::new(),
                values: vec![f64::NAN; PARAMS.len()],
                severities: BTreeMap::new(),
                overrides: Vec::new(),
            },
            None => Profile::default_profile(),
        };
        if let Some(n) = name {
            profile.name = n;
        } else if builtin_text(source).is_none() {
            profile.name = source.to_string();
        }
        if let Some(d) = description {
            profile.description = d;
        }
        for (k, v) in thresholds {
            let idx = param_index(&k).ok_or_else(|| unknown_key(&k, source))?;
            let value = match v {
                toml::Value::Integer(i) => i as f64,
                toml::Value::Float(f) => f,
                _ => return Err(Error::bad_request(format!("profile {source}: `{k}` must be a number"))),
            };
            check_value(&k, value)?;
            profile.values[idx] = value;
        }
        for (id, v) in severity {
            if !checks.contains(&id.as_str()) {
                return Err(Error::bad_request(format!(
                    "profile {source}: unknown check `{id}` in [severity]; valid: {}",
                    checks.join(", ")
                )));
            }
            let sev = v.as_str().and_then(Severity::parse).ok_or_else(|| {
                Error::bad_request(format!("profile {source}: severity of {id} must be error, warning or info"))
            })?;
            profile.severities.insert(id, sev);
        }
        if let Some(missing) = PARAMS.iter().zip(&profile.values).find(|(_, v)| v.is_nan()) {
            return Err(Error::bad_request(format!("profile {source} does not set `{}`", missing.0.key)));
        }
        Ok(profile)
    }

    /// The value of a parameter. Panics on a key that is not in [`PARAMS`]
    /// (an internal invariant: checks name their keys statically).
    pub fn get(&self, key: &str) -> f64 {
        let idx = param_index(key).unwrap_or_else(|| panic!("unknown profile parameter {key}"));
        self.values[idx]
    }

    /// Applies one override; only the specification's keys are accepted.
    pub fn apply_override(&mut self, key: &str, value: f64) -> Result<()> {
        let idx = param_index(key).filter(|&i| PARAMS[i].overridable).ok_or_else(|| {
            Error::bad_request(format!("unknown override key `{key}`; valid keys: {}", override_keys().join(", ")))
                .with_detail(serde_json::json!({"field": "overrides", "reason": format!("unknown key {key}")}))
        })?;
        check_value(key, value)?;
        self.values[idx] = value;
        self.overrides.retain(|(k, _)| k != key);
        self.overrides.push((key.to_string(), value));
        Ok(())
    }

    /// Parses and applies `key=value`.
    pub fn apply_override_str(&mut self, spec: &str) -> Result<()> {
        let (k, v) = spec.split_once('=').ok_or_else(|| {
            Error::bad_request(format!(
                "override `{spec}` is not KEY=VALUE; valid keys: {}",
                override_keys().join(", ")
            ))
        })?;
        let value: f64 = v.trim().parse().map_err(|_| {
            Error::bad_request(format!("override `{k}` needs a number, got `{v}`"))
                .with_detail(serde_json::json!({"field": "overrides", "reason": format!("{k} is not a number")}))
        })?;
        self.apply_override(k.trim(), value)
    }

    /// Sets the weld tolerance in metres (`--weld-tolerance`, API `weld_tolerance`).
    pub fn set_weld_tolerance(&mut self, metres: f64) -> Result<()> {
        check_value("weld_tolerance", metres)?;
        if metres > 1.0 {
            return Err(Error::bad_request(format!("weld tolerance {metres} m is over the 1 m maximum")));
        }
        let idx = param_index("weld_tolerance").expect("weld_tolerance is a parameter");
        self.values[idx] = metres;
        Ok(())
    }

    /// The effective thresholds as a JSON object, in [`PARAMS`] order.
    pub fn thresholds_json(&self) -> Map<String, Value> {
        PARAMS.iter().zip(&self.values).map(|(p, v)| (p.key.to_string(), crate::report::num(*v))).collect()
    }

    /// The overrides as a JSON object, in the order given.
    pub fn overrides_json(&self) -> Map<String, Value> {
        self.overrides.iter().map(|(k, v)| (k.clone(), crate::report::num(*v))).collect()
    }

    /// The severity a check runs with under this profile.
    pub fn severity_of(&self, id: &str, default: Severity) -> Severity {
        self.severities.get(id).copied().unwrap_or(default)
    }
}

fn check_value(key: &str, value: f64) -> Result<()> {
    if !value.is_finite() || value < 0.0 {
        return Err(Error::bad_request(format!("`{key}` must be a finite, non-negative number, got {value}"))
            .with_detail(serde_json::json!({"field": key, "reason": "must be a finite, non-negative number"})));
    }
    Ok(())
}

fn unknown_profile(name: &str) -> Error {
    Error::bad_request(format!(
        "unknown profile `{name}`; valid profiles: {} (or a path to a .toml file)",
        BUILTIN_NAMES.join(", ")
    ))
    .with_detail(serde_json::json!({"field": "profile", "reason": format!("unknown profile {name}")}))
}

fn unknown_key(key: &str, source: &str) -> Error {
    let keys: Vec<&str> = PARAMS.iter().map(|p| p.key).collect();
    Error::bad_request(format!("profile {source}: unknown parameter `{key}`; valid: {}", keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse_and_match_design_figures() {
        let web = Profile::builtin("web").unwrap();
        assert_eq!(web.get("max_tris"), 100_000.0);
        assert_eq!(web.get("max_texture_mem"), 67_108_864.0);
        let mobile = Profile::builtin("mobile").unwrap();
        assert_eq!(mobile.get("max_file_bytes"), 3_145_728.0);
        let hero = Profile::builtin("hero").unwrap();
        assert_eq!(hero.get("max_texture_dim"), 8192.0);
        assert_eq!(Profile::builtin("pc").unwrap().get("max_draw_calls"), 100.0);
    }

    #[test]
    fn overrides_accept_only_spec_keys() {
        let mut p = Profile::default_profile();
        p.apply_override_str("max_tris=5").unwrap();
        assert_eq!(p.get("max_tris"), 5.0);
        assert!(p.apply_override_str("weld_tolerance=1").is_err());
        assert!(p.apply_override_str("nope=1").is_err());
        assert!(p.apply_override_str("max_tris=-1").is_err());
        assert!(p.apply_override_str("max_tris=abc").is_err());
    }

    #[test]
    fn custom_profile_extends_a_builtin() {
        let p = Profile::from_toml(
            "name = \"mine\"\nextends = \"pc\"\n[thresholds]\nmax_tris = 7\n[severity]\n\"MAT-004\" = \"error\"\n",
            "mine.toml",
            &["MAT-004"],
        )
        .unwrap();
        assert_eq!(p.name, "mine");
        assert_eq!(p.get("max_tris"), 7.0);
        assert_eq!(p.get("max_verts"), 250_000.0);
        assert_eq!(p.severity_of("MAT-004", Severity::Warning), Severity::Error);
        assert!(Profile::from_toml("[thresholds]\nbogus = 1\n", "x.toml", &[]).is_err());
        let e = Profile::from_toml("[severity]\n\"MAT-009\" = \"error\"\n", "x.toml", &["MAT-004"]).unwrap_err();
        assert_eq!(e.message, "profile x.toml: unknown check `MAT-009` in [severity]; valid: MAT-004");
    }
}
