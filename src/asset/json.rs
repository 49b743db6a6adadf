//! Reading glTF JSON leniently: every JSON object with an `asset` is a
//! document that gets a report card.
//!
//! The loader's model (`gltf-json`) is stricter than glTF 2.0 in places
//! (an animation target without `node`, an integer written as `1.0`) and,
//! like any typed model, refuses a document with a property of the wrong
//! type or a required property missing. Engines load such files, and users
//! need their report most. So a document that the model refuses is read
//! again as plain JSON and mended, one fault at a time, until it fits:
//!
//! - numbers written as integral floats (`1.0`) become integers (same value);
//! - an animation channel whose target has no `node` is left out (glTF 2.0
//!   allows it: `KHR_animation_pointer` targets have none; the animation
//!   budget counts the channels that remain);
//! - a property of the wrong type is ignored (as if absent), and a note says so;
//! - an object that lacks a property it cannot do without (an accessor
//!   without `count`, a mesh without `primitives`) is replaced by an empty
//!   one of its kind, so that the indices of its siblings keep their
//!   meaning, and is recorded in [`Lenient::unreadable`]: anything that
//!   reads it gets an error naming its JSON pointer, and the checks that
//!   need it skip what they cannot read.
//!
//! A document that is valid for the model is read directly, untouched (the
//! fast path). What is not a JSON object with an `asset` object is
//! MALFORMED_GLTF; an `asset.version` other than 2.x is UNSUPPORTED_FORMAT.

use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::BTreeMap;

/// Most faults mended in one object of a top-level array (an accessor, a
/// mesh, ...) and, separately, in what lies outside those arrays, before the
/// document is refused: each mend reads that object again, so the work is
/// bounded by this times the document's size.
pub const MAX_MENDS: usize = 64;

/// Something the loader did not read as written, and what it did instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// JSON pointer of what it concerns.
    pub pointer: String,
    /// What was done, in one sentence.
    pub message: String,
}

impl Note {
    /// A note about `pointer`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Note {
        Note { pointer: pointer.into(), message: message.into() }
    }
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

/// A document read leniently.
#[derive(Debug)]
pub struct Lenient {
    /// The document as the model reads it.
    pub root: gltf::json::Root,
    /// What was mended, in document order of discovery.
    pub notes: Vec<Note>,
    /// Objects replaced by an empty one of their kind, by JSON pointer, with
    /// the reason (`/accessors/3` → "missing field `count`").
    pub unreadable: BTreeMap<String, String>,
}

/// Reads a glTF JSON document (without a byte-order mark).
pub fn read(json: &[u8]) -> Result<Lenient> {
    match gltf::json::Root::from_slice(json) {
        Ok(root) => {
            check_version(root.asset.version.as_str())?;
            Ok(Lenient { root, notes: Vec::new(), unreadable: BTreeMap::new() })
        }
        Err(first) => {
            let value: Value = match serde_json::from_slice(json) {
                Ok(v) => v,
                // JSON's grammar allows 1e400; a double cannot hold it.
                Err(e) if e.to_string().starts_with("number out of range") => {
                    serde_json::from_slice(&quote_huge_numbers(json)).map_err(|e| not_json(&e))?
                }
                Err(e) => return Err(not_json(&e)),
            };
            mend(value, &first)
        }
    }
}

fn not_json(e: &serde_json::Error) -> Error {
    Error::malformed(format!("the glTF JSON does not parse: {e}"))
        .with_detail(serde_json::json!({"reason": e.to_string()}))
}

fn check_version(version: &str) -> Result<()> {
    if version.starts_with("2.") {
        Ok(())
    } else {
        Err(Error::unsupported(format!("asset.version is {version:?}; meshcheck reads glTF 2.0")))
    }
}

/// Mends a parsed JSON value until the model reads it.
fn mend(mut value: Value, first: &serde_json::Error) -> Result<Lenient> {
    let Some(obj) = value.as_object_mut() else {
        return Err(Error::malformed("the glTF JSON is not an object").with_detail(serde_json::json!({"pointer": ""})));
    };
    let Some(asset) = obj.get_mut("asset").and_then(Value::as_object_mut) else {
        return Err(Error::malformed(format!(
            "the JSON has no `asset` object, so it is not a glTF document ({first})"
        ))
        .with_detail(serde_json::json!({"pointer": "/asset", "reason": first.to_string()})));
    };
    let mut notes = Vec::new();
    match asset.get("version") {
        Some(Value::String(v)) => check_version(v)?,
        // `"version": 1` is glTF 1.0 written carelessly, not a 2.0 document.
        Some(Value::Number(n)) if n.as_f64().is_some_and(|v| !(2.0..3.0).contains(&v)) => {
            return Err(Error::unsupported(format!("asset.version is {n}; meshcheck reads glTF 2.0")));
        }
        _ => {
            asset.insert("version".into(), Value::String("2.0".into()));
            notes.push(Note::new("/asset/version", "asset.version is missing or not a string; read as glTF 2.0"));
        }
    }
    integral_floats_to_integers(&mut value);
    drop_nodeless_channels(&mut value);
    // scene.nodes is optional in glTF 2.0 but required by the model.
    if let Some(scenes) = value.get_mut("scenes").and_then(Value::as_array_mut) {
        for s in scenes.iter_mut().filter_map(Value::as_object_mut) {
            s.entry("nodes").or_insert_with(|| Value::Array(Vec::new()));
        }
    }
    let mut unreadable = BTreeMap::new();
    // Each object of the indexed arrays alone first, so that a fault costs a
    // read of its own object, not of the whole document.
    {
        use gltf::json as j;
        let mut each =
            |key: &str, read: fn(&Value) -> Typed| mend_each(&mut value, key, read, &mut notes, &mut unreadable);
        each("accessors", typed::<j::Accessor>)?;
        each("animations", typed::<j::Animation>)?;
        each("buffers", typed::<j::Buffer>)?;
        each("bufferViews", typed::<j::buffer::View>)?;
        each("cameras", typed::<j::Camera>)?;
        each("images", typed::<j::Image>)?;
        each("materials", typed::<j::Material>)?;
        each("meshes", typed::<j::Mesh>)?;
        each("nodes", typed::<j::Node>)?;
        each("samplers", typed::<j::texture::Sampler>)?;
        each("scenes", typed::<j::Scene>)?;
        each("skins", typed::<j::Skin>)?;
        each("textures", typed::<j::Texture>)?;
    }
    for _ in 0..=MAX_MENDS {
        let err = match serde_path_to_error::deserialize::<_, gltf::json::Root>(&value) {
            Ok(root) => return Ok(Lenient { root, notes, unreadable }),
            Err(e) => e,
        };
        let path = segments(err.path());
        let reason = err.inner().to_string();
        if !mend_one(&mut value, &path, &reason, &mut notes, &mut unreadable) {
            return Err(refused(&reason, &pointer(&path)));
        }
    }
    Err(Error::malformed(format!("the glTF JSON has more than {MAX_MENDS} faults the loader cannot read past")))
}

type Typed = std::result::Result<(), serde_path_to_error::Error<serde_json::Error>>;

/// Reads `v` as a `T`, keeping the path of the first fault.
fn typed<T: serde::de::DeserializeOwned>(v: &Value) -> Typed {
    serde_path_to_error::deserialize::<_, T>(v).map(drop)
}

/// Mends every element of the top-level array `key` until `read` takes it.
fn mend_each(
    value: &mut Value,
    key: &str,
    read: fn(&Value) -> Typed,
    notes: &mut Vec<Note>,
    unreadable: &mut BTreeMap<String, String>,
) -> Result<()> {
    let len = match value.get(key) {
        Some(Value::Array(a)) => a.len(),
        _ => return Ok(()),
    };
    for i in 0..len {
        for attempt in 0..=MAX_MENDS {
            let Some(elem) = value.get(key).and_then(|a| a.get(i)) else { break };
            let err = match read(elem) {
                Ok(()) => break,
                Err(e) => e,
            };
            let mut path = vec![Seg::Key(key.to_string()), Seg::Index(i)];
            path.extend(segments(err.path()));
            let reason = err.inner().to_string();
            if attempt == MAX_MENDS || !mend_one(value, &path, &reason, notes, unreadable) {
                return Err(refused(&reason, &pointer(&path)));
            }
        }
    }
    Ok(())
}

fn refused(reason: &str, pointer: &str) -> Error {
    Error::malformed(format!("the glTF JSON cannot be read as a document: {reason} at {pointer}"))
        .with_detail(serde_json::json!({"pointer": pointer, "reason": reason}))
}

/// One step of a path into the JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn segments(path: &serde_path_to_error::Path) -> Vec<Seg> {
    use serde_path_to_error::Segment;
    let mut out = Vec::new();
    for s in path.iter() {
        match s {
            Segment::Seq { index } => out.push(Seg::Index(*index)),
            Segment::Map { key } => out.push(Seg::Key(key.clone())),
            // Flattened maps and enum variants lose the path below them:
            // mend at the deepest known point.
            Segment::Enum { .. } | Segment::Unknown => break,
        }
    }
    out
}

fn pointer(path: &[Seg]) -> String {
    let mut s = String::new();
    for seg in path {
        s.push('/');
        match seg {
            Seg::Key(k) => s.push_str(&k.replace('~', "~0").replace('/', "~1")),
            Seg::Index(i) => s.push_str(&i.to_string()),
        }
    }
    s
}

fn get_mut<'v>(value: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, seg| match seg {
        Seg::Key(k) => v.as_object_mut()?.get_mut(k),
        Seg::Index(i) => v.as_array_mut()?.get_mut(*i),
    })
}

/// An empty object of the kind that lives at `path`, for the arrays whose
/// elements other objects name by index; `None` elsewhere.
fn stub(path: &[Seg]) -> Option<Value> {
    let json = match path {
        [Seg::Key(collection), Seg::Index(_)] => match collection.as_str() {
            "accessors" => r#"{"componentType":5126,"count":0,"type":"SCALAR"}"#,
            "animations" => r#"{"channels":[],"samplers":[]}"#,
            "buffers" => r#"{"byteLength":0}"#,
            "bufferViews" => r#"{"buffer":0,"byteLength":0}"#,
            "cameras" => r#"{"type":"perspective","perspective":{"yfov":1,"znear":1}}"#,
            "meshes" => r#"{"primitives":[]}"#,
            "scenes" => r#"{"nodes":[]}"#,
            "skins" => r#"{"joints":[]}"#,
            "images" | "materials" | "nodes" | "samplers" | "textures" => "{}",
            _ => return None,
        },
        [Seg::Key(m), Seg::Index(_), Seg::Key(p), Seg::Index(_)] if m == "meshes" && p == "primitives" => {
            r#"{"attributes":{}}"#
        }
        [Seg::Key(a), Seg::Index(_), Seg::Key(s), Seg::Index(_)] if a == "animations" && s == "samplers" => {
            r#"{"input":0,"output":0}"#
        }
        _ => return None,
    };
    serde_json::from_str(json).ok()
}

/// Mends the fault the model met at `path` (for a missing field, the object
/// that lacks it; otherwise the bad value); false when it cannot be mended.
fn mend_one(
    value: &mut Value,
    path: &[Seg],
    reason: &str,
    notes: &mut Vec<Note>,
    unreadable: &mut BTreeMap<String, String>,
) -> bool {
    if path.is_empty() || path == [Seg::Key("asset".into())] {
        return false;
    }
    let ptr = pointer(path);
    if unreadable.contains_key(&ptr) {
        // Mended already, and the mend did not fit.
        return false;
    }
    if let Some(empty) = stub(path) {
        let Some(slot) = get_mut(value, path) else { return false };
        *slot = empty;
        notes.push(Note::new(ptr.clone(), format!("cannot be read ({reason}); what needs it is left out")));
        unreadable.insert(ptr, reason.to_string());
        return true;
    }
    // Anything else is ignored: a property is read as absent. In a list of
    // indices (children, scene nodes, joints) every entry that is not an
    // index is left out at once; any other list is ignored whole, as a
    // property. When the model needs what was ignored, its own object is
    // mended next.
    let Some((last, parent)) = path.split_last() else { return false };
    if let (Seg::Index(_), Some((Seg::Key(list), _))) = (last, parent.split_last())
        && INDEX_LISTS.contains(&list.as_str())
        && let Some(Value::Array(a)) = get_mut(value, parent)
    {
        let before = a.len();
        a.retain(|v| v.as_u64().is_some_and(|i| i <= u32::MAX as u64));
        notes.push(Note::new(
            pointer(parent),
            format!("{} entries that are not indices were ignored ({reason})", before - a.len()),
        ));
        return before != a.len();
    }
    let (last, parent) = match last {
        Seg::Index(_) if !parent.is_empty() => parent.split_last().unwrap_or((last, parent)),
        _ => (last, parent),
    };
    let ptr = pointer(&[parent, std::slice::from_ref(last)].concat());
    let done = match (last, get_mut(value, parent)) {
        (Seg::Key(k), Some(Value::Object(m))) => m.shift_remove(k).is_some(),
        (Seg::Index(i), Some(Value::Array(a))) if *i < a.len() => {
            a.remove(*i);
            true
        }
        _ => false,
    };
    if done {
        notes.push(Note::new(ptr, format!("ignored: {reason}")));
    }
    done
}

/// Lists whose entries are indices of other objects.
const INDEX_LISTS: &[&str] = &["children", "nodes", "joints"];

/// Rewrites every number whose magnitude a double cannot hold (`1e309`) as
/// a string saying so, which the model then refuses and the mender ignores
/// with a note. Strings are copied as they are.
fn quote_huge_numbers(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + 64);
    let mut i = 0;
    let mut in_string = false;
    while i < json.len() {
        let b = json[i];
        if in_string {
            out.push(b);
            match b {
                b'\\' if i + 1 < json.len() => {
                    out.push(json[i + 1]);
                    i += 1;
                }
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
        }
        if b == b'-' || b.is_ascii_digit() {
            let end = json[i..]
                .iter()
                .position(|c| !(c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E')))
                .map_or(json.len(), |n| i + n);
            let token = &json[i..end];
            let huge =
                std::str::from_utf8(token).ok().and_then(|t| t.parse::<f64>().ok()).is_some_and(f64::is_infinite);
            if huge {
                out.extend_from_slice(b"\"number out of range: ");
                out.extend_from_slice(token);
                out.push(b'"');
            } else {
                out.extend_from_slice(token);
            }
            i = end;
            continue;
        }
        out.push(b);
        i += 1;
    }
    out
}

/// Rewrites every number written as an integral float (`1.0`, `2e3`) as an
/// integer of the same value: glTF's JSON schema types are about values, and
/// the model's integer fields refuse the float spelling.
fn integral_floats_to_integers(value: &mut Value) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    *v = if f < 0.0 { Value::from(f as i64) } else { Value::from(f as u64) };
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(m) => stack.extend(m.values_mut()),
            _ => {}
        }
    }
}

/// Leaves out animation channels whose target names no node (glTF 2.0
/// allows it; extensions such as `KHR_animation_pointer` say what they
/// animate). Nothing meshcheck measures reads animation channels.
fn drop_nodeless_channels(value: &mut Value) {
    let Some(anims) = value.get_mut("animations").and_then(Value::as_array_mut) else { return };
    for a in anims {
        if let Some(ch) = a.get_mut("channels").and_then(Value::as_array_mut) {
            ch.retain(|c| c.get("target").is_none_or(|t| t.get("node").is_some()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_numbers_are_quoted_outside_strings_only() {
        let json = br#"{"a": [1e309, -1E+400, 2.5e3, 0], "b": "x\"1e400\" y", "c": 7}"#;
        let out = String::from_utf8(quote_huge_numbers(json)).unwrap();
        assert_eq!(
            out,
            r#"{"a": ["number out of range: 1e309", "number out of range: -1E+400", 2.5e3, 0], "b": "x\"1e400\" y", "c": 7}"#
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["c"], 7);
    }

    #[test]
    fn a_valid_document_takes_the_fast_path_untouched() {
        let r = read(br#"{"asset": {"version": "2.0"}, "nodes": [{"mesh": 0}]}"#).unwrap();
        assert!(r.notes.is_empty() && r.unreadable.is_empty());
    }

    #[test]
    fn faults_are_mended_with_pointers() {
        let r = read(
            br#"{"asset": {"version": "2.0"}, "nodes": [{"translation": [1e309, 0, 0]}, {"children": ["a", 0, -1]}],
                "accessors": [{"count": 3.0, "componentType": 5126.0, "type": "VEC3"}, {"type": "VEC3"}]}"#,
        )
        .unwrap();
        let notes: Vec<String> = r.notes.iter().map(ToString::to_string).collect();
        assert_eq!(r.root.accessors[0].count.0, 3, "{notes:?}");
        assert!(r.root.nodes[0].translation.is_none());
        assert_eq!(r.root.nodes[1].children.as_ref().unwrap().len(), 1);
        assert!(r.unreadable.contains_key("/accessors/1"), "{notes:?}");
        assert!(notes.iter().any(|n| n.starts_with("/nodes/0/translation: ignored")), "{notes:?}");
        assert!(notes.iter().any(|n| n.starts_with("/nodes/1/children: 2 entries")), "{notes:?}");
        assert!(
            notes.iter().any(|n| n.starts_with("/accessors/1: cannot be read (missing field `count`)")),
            "{notes:?}"
        );
    }
}
