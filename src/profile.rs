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

/// One budget parameter, declared by the check that reads it (beside its
/// function, in `checks/<family>.rs`): its key, unit, meaning and whether the
/// specification lets `overrides` replace it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
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

/// What a profile is checked against: every parameter the checks read and
/// every check ID a `[severity]` table may name. Budgets sit below the
/// checks and do not know them; the catalog hands this in
/// (`checks::catalog::schema()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schema {
    /// Every parameter some check reads.
    pub params: Vec<&'static Param>,
    /// Every check ID.
    pub checks: Vec<&'static str>,
}

impl Schema {
    fn param(&self, key: &str) -> Option<&'static Param> {
        self.params.iter().copied().find(|p| p.key == key)
    }
}

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

/// A resolved profile: every parameter of its schema has a value, in the
/// order its built-in file lists them (the order reports echo them in).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The profile's name (a built-in name, or the name in the user's file).
    pub name: String,
    /// One line on what it is for.
    pub description: String,
    values: Vec<(&'static Param, f64)>,
    /// Per-check severity changes made by a custom profile.
    pub severities: BTreeMap<String, Severity>,
    /// The overrides applied, in the order given.
    pub overrides: Vec<(String, f64)>,
}

impl Profile {
    /// A built-in profile by name, checked against `schema`.
    pub fn builtin(name: &str, schema: &Schema) -> Result<Profile> {
        let text = builtin_text(name).ok_or_else(|| unknown_profile(name))?;
        Profile::from_toml(text, name, schema)
    }

    /// A built-in name, or a path to a TOML file (anything ending in `.toml`
    /// or containing a path separator), checked against `schema`.
    pub fn load(name_or_path: &str, schema: &Schema) -> Result<Profile> {
        if builtin_text(name_or_path).is_some() {
            return Profile::builtin(name_or_path, schema);
        }
        let looks_like_path = name_or_path.ends_with(".toml") || name_or_path.contains(['/', '\\']);
        if !looks_like_path {
            return Err(unknown_profile(name_or_path));
        }
        let text = std::fs::read_to_string(name_or_path).map_err(|e| {
            Error::bad_request(format!("cannot read profile file {name_or_path}: {e}"))
                .with_detail(serde_json::json!({"field": "profile", "reason": e.to_string()}))
        })?;
        Profile::from_toml(&text, name_or_path, schema)
    }

    /// Parses a profile file. A file may `extends = "NAME"` (default `web`) and
    /// then give any subset of `[thresholds]` and `[severity]`; `[thresholds]`
    /// may name only the schema's parameters and `[severity]` only its check
    /// IDs. A built-in file (no `extends`) must set every parameter.
    pub fn from_toml(text: &str, source: &str, schema: &Schema) -> Result<Profile> {
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
        let builtin_itself = extends.is_none() && builtin_text(source).is_some();
        let mut profile = match extends.as_deref() {
            Some(base) => Profile::builtin(base, schema)?,
            None if builtin_itself => Profile {
                name: source.to_string(),
                description: String::new(),
                values: Vec::new(),
                severities: BTreeMap::new(),
                overrides: Vec::new(),
            },
            None => Profile::builtin(BUILTIN_NAMES[0], schema)?,
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
            let param = schema.param(&k).ok_or_else(|| unknown_key(&k, source, schema))?;
            let value = match v {
                toml::Value::Integer(i) => i as f64,
                toml::Value::Float(f) => f,
                _ => return Err(Error::bad_request(format!("profile {source}: `{k}` must be a number"))),
            };
            check_value(&k, value)?;
            match profile.values.iter_mut().find(|(p, _)| p.key == param.key) {
                Some(slot) => slot.1 = value,
                None => profile.values.push((param, value)),
            }
        }
        for (id, v) in severity {
            if !schema.checks.contains(&id.as_str()) {
                return Err(Error::bad_request(format!(
                    "profile {source}: unknown check `{id}` in [severity]; valid: {}",
                    schema.checks.join(", ")
                )));
            }
            let sev = v.as_str().and_then(Severity::parse).ok_or_else(|| {
                Error::bad_request(format!("profile {source}: severity of {id} must be error, warning or info"))
            })?;
            profile.severities.insert(id, sev);
        }
        if let Some(missing) = schema.params.iter().find(|p| !profile.values.iter().any(|(q, _)| q.key == p.key)) {
            return Err(Error::bad_request(format!("profile {source} does not set `{}`", missing.key)));
        }
        Ok(profile)
    }

    /// The value of a parameter. Panics on a parameter the profile was not
    /// checked against (an internal invariant: every profile is loaded
    /// against the catalog's schema, which holds every parameter a check
    /// reads).
    pub fn get(&self, param: &Param) -> f64 {
        self.value(param.key).unwrap_or_else(|| panic!("profile parameter {} is not in the schema", param.key))
    }

    /// The value of a parameter by key, if the profile has it.
    pub fn value(&self, key: &str) -> Option<f64> {
        self.values.iter().find(|(p, _)| p.key == key).map(|(_, v)| *v)
    }

    /// The parameters and their values, in the profile's order.
    pub fn values(&self) -> impl Iterator<Item = (&'static Param, f64)> + '_ {
        self.values.iter().copied()
    }

    /// The keys `overrides` accepts, in the profile's order.
    pub fn override_keys(&self) -> Vec<&'static str> {
        self.values.iter().filter(|(p, _)| p.overridable).map(|(p, _)| p.key).collect()
    }

    /// Applies one override; only the specification's keys are accepted.
    pub fn apply_override(&mut self, key: &str, value: f64) -> Result<()> {
        let Some(idx) = self.values.iter().position(|(p, _)| p.key == key && p.overridable) else {
            return Err(Error::bad_request(format!(
                "unknown override key `{key}`; valid keys: {}",
                self.override_keys().join(", ")
            ))
            .with_detail(serde_json::json!({"field": "overrides", "reason": format!("unknown key {key}")})));
        };
        check_value(key, value)?;
        self.values[idx].1 = value;
        self.overrides.retain(|(k, _)| k != key);
        self.overrides.push((key.to_string(), value));
        Ok(())
    }

    /// Parses and applies `key=value`.
    pub fn apply_override_str(&mut self, spec: &str) -> Result<()> {
        let (k, v) = spec.split_once('=').ok_or_else(|| {
            Error::bad_request(format!(
                "override `{spec}` is not KEY=VALUE; valid keys: {}",
                self.override_keys().join(", ")
            ))
        })?;
        let value: f64 = v.trim().parse().map_err(|_| {
            Error::bad_request(format!("override `{k}` needs a number, got `{v}`"))
                .with_detail(serde_json::json!({"field": "overrides", "reason": format!("{k} is not a number")}))
        })?;
        self.apply_override(k.trim(), value)
    }

    /// Sets a parameter outside `overrides` (a flag or request field of its
    /// own, such as the weld tolerance): finite and non-negative.
    pub fn set(&mut self, param: &Param, value: f64) -> Result<()> {
        check_value(param.key, value)?;
        let slot = self
            .values
            .iter_mut()
            .find(|(p, _)| p.key == param.key)
            .ok_or_else(|| Error::internal(format!("profile parameter {} is not in the schema", param.key)))?;
        slot.1 = value;
        Ok(())
    }

    /// The effective thresholds as a JSON object, in the profile's order.
    pub fn thresholds_json(&self) -> Map<String, Value> {
        self.values.iter().map(|(p, v)| (p.key.to_string(), crate::report::num(*v))).collect()
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

fn unknown_key(key: &str, source: &str, schema: &Schema) -> Error {
    let keys: Vec<&str> = schema.params.iter().map(|p| p.key).collect();
    Error::bad_request(format!("profile {source}: unknown parameter `{key}`; valid: {}", keys.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Param = Param { key: "max_a", unit: "things", doc: "A", overridable: true, integer: true };
    const B: Param = Param { key: "b_pct", unit: "%", doc: "B", overridable: false, integer: false };

    fn schema() -> Schema {
        Schema { params: vec![&A, &B], checks: vec!["X-001"] }
    }

    #[test]
    fn a_profile_is_checked_against_its_schema() {
        let s = schema();
        let p = Profile::from_toml("name = \"n\"\n[thresholds]\nb_pct = 2.5\nmax_a = 7\n", "n.toml", &s);
        // A custom file extends `web`, whose keys this schema does not have.
        assert!(p.is_err());
        let e = Profile::from_toml("[thresholds]\nbogus = 1\n", "web", &s).unwrap_err();
        assert_eq!(e.message, "profile web: unknown parameter `bogus`; valid: max_a, b_pct");
        let e = Profile::from_toml("[thresholds]\nmax_a = 1\n", "web", &s).unwrap_err();
        assert_eq!(e.message, "profile web does not set `b_pct`");
        let mut p = Profile::from_toml("[thresholds]\nb_pct = 2.5\nmax_a = 7\n", "web", &s).unwrap();
        // File order, not schema order.
        assert_eq!(p.thresholds_json().keys().collect::<Vec<_>>(), ["b_pct", "max_a"]);
        assert_eq!(p.get(&A), 7.0);
        assert_eq!(p.override_keys(), ["max_a"]);
        p.apply_override_str("max_a=5").unwrap();
        assert_eq!(p.get(&A), 5.0);
        assert!(p.apply_override_str("b_pct=1").is_err());
        assert!(p.apply_override_str("nope=1").is_err());
        assert!(p.apply_override_str("max_a=-1").is_err());
        assert!(p.apply_override_str("max_a=abc").is_err());
        p.set(&B, 0.5).unwrap();
        assert_eq!(p.get(&B), 0.5);
        assert!(p.set(&B, f64::NAN).is_err());
        let e = Profile::from_toml("[severity]\n\"X-009\" = \"error\"\n", "web", &s).unwrap_err();
        assert_eq!(e.message, "profile web: unknown check `X-009` in [severity]; valid: X-001");
    }
}
