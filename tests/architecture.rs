//! The architecture rule, as a test (docs/architecture.md): the parts of the
//! library form layers, each may use only the parts below it, and no two
//! source files use each other, directly or round a circle.
//!
//! The graph is read from the source text: every `crate::…` path (in `use`
//! trees and in expressions), every `super::…` and `self::…` path, and every
//! path that starts with a child module's name, resolved to the file that
//! defines the module it names. `main.rs` names the library `meshcheck::`.
//! Comments and string literals are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The parts, top first. A part may use the parts on lines below its own;
/// parts on one line may not use each other (`main` may use `cli`).
const LAYERS: &[&[&str]] = &[
    &["main"],
    &["cli"],
    &["server"],
    &["engine"],
    &["checks"],
    &["vision", "validator", "render"],
    &["profile"],
    &["asset"],
    &["geom"],
    &["store"],
    &["report"],
    &["error"],
    &["memory"],
    &["testing"],
];

/// One source file: its module path (`["asset", "scene"]`) and its text.
struct SourceFile {
    rel: String,
    module: Vec<String>,
    /// Whether the file is a directory's `mod.rs` (its `super` is one level up).
    is_dir_module: bool,
    text: String,
}

fn src_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn collect(dir: &Path, out: &mut Vec<SourceFile>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
            continue;
        }
        if path.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let rel = path.strip_prefix(src_root()).unwrap().to_string_lossy().replace('\\', "/");
        let mut module: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
        let is_dir_module = module.last().is_some_and(|m| m == "mod");
        if is_dir_module {
            module.pop();
        }
        if rel == "lib.rs" {
            module.clear();
        }
        out.push(SourceFile { rel, module, is_dir_module, text: std::fs::read_to_string(&path).unwrap() });
    }
}

/// The text with comments and the contents of string and char literals blanked.
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(b' ');
            continue;
        }
        // Raw strings: r"…", r#"…"#, br#"…"#.
        if (c == b'r' || (c == b'b' && b.get(i + 1) == Some(&b'r')))
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
        {
            let mut j = i + if c == b'b' { 2 } else { 1 };
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) == Some(&b'"') {
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                out.extend_from_slice(b"\"\"");
                i = j;
                continue;
            }
        }
        if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.extend_from_slice(b"\"\"");
            continue;
        }
        if c == b'\'' {
            // A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                out.extend_from_slice(b"' '");
                i = j + 1;
                continue;
            }
            if b.get(i + 2) == Some(&b'\'') {
                out.extend_from_slice(b"' '");
                i += 3;
                continue;
            }
            // A multi-byte char: find the closing quote within 5 bytes.
            if let Some(k) = (2..6).find(|&k| b.get(i + k) == Some(&b'\''))
                && !b[i + 1].is_ascii()
            {
                out.extend_from_slice(b"' '");
                i += k + 1;
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Expands a `use` tree (`a::{b, c::{d, e}}`) into its paths.
fn expand_tree(tree: &str) -> Vec<String> {
    // Drop renames (`X as Y`), then the whitespace.
    let mut words = Vec::new();
    let mut it = tree.split_whitespace();
    while let Some(w) = it.next() {
        if w == "as" {
            // The alias may carry the separator that follows it (`Y,` or `Y}`).
            let alias = it.next().unwrap_or("");
            words.push(alias.trim_start_matches(is_ident).to_owned());
        } else {
            words.push(w.to_owned());
        }
    }
    let tree: String = words.concat();
    let mut out = Vec::new();
    expand_into("", &tree, &mut out);
    out
}

fn expand_into(prefix: &str, tree: &str, out: &mut Vec<String>) {
    // Split on top-level commas.
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    for part in parts {
        if part.is_empty() {
            continue;
        }
        if let Some(open) = part.find('{') {
            let head = part[..open].trim_end_matches("::");
            let inner = &part[open + 1..part.rfind('}').unwrap_or(part.len())];
            let p = join(prefix, head);
            expand_into(&p, inner, out);
        } else {
            out.push(join(prefix, part));
        }
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_owned(),
        (_, true) => a.to_owned(),
        _ => format!("{a}::{b}"),
    }
}

/// Every path the code names, as written (`crate::asset::scene::Scene`, `super::x`, `geo::run`).
fn paths_in(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    // `use` trees, which may span lines.
    let mut rest = code;
    while let Some(pos) = find_word(rest, "use") {
        let after = &rest[pos + 3..];
        let end = after.find(';').unwrap_or(after.len());
        out.extend(expand_tree(&after[..end]));
        rest = &after[end..];
    }
    // Paths in expressions and types: identifier chains joined by `::`.
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if is_ident(chars[i]) && (i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == ':')) {
            let start = i;
            let mut j = i;
            loop {
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                if j + 2 < chars.len() && chars[j] == ':' && chars[j + 1] == ':' && is_ident(chars[j + 2]) {
                    j += 2;
                    continue;
                }
                break;
            }
            let s: String = chars[start..j].iter().collect();
            if s.contains("::") {
                out.push(s);
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

fn find_word(hay: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(p) = hay[from..].find(word) {
        let at = from + p;
        let before = hay[..at].chars().next_back();
        let after = hay[at + word.len()..].chars().next();
        if !before.is_some_and(is_ident) && after.is_some_and(char::is_whitespace) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The code outside inline modules (`mod name { … }`) and the code inside them.
fn split_inline_modules(code: &str) -> (String, String) {
    let mut outer = String::with_capacity(code.len());
    let mut inner = String::new();
    let mut rest = code;
    while let Some(at) = find_word(rest, "mod") {
        let after = &rest[at + 3..];
        let name_len = after.trim_start().chars().take_while(|&c| is_ident(c)).map(char::len_utf8).sum::<usize>();
        let ws = after.len() - after.trim_start().len();
        let tail = after[ws + name_len..].trim_start();
        if name_len == 0 || !tail.starts_with('{') {
            outer.push_str(&rest[..at + 3]);
            rest = after;
            continue;
        }
        outer.push_str(&rest[..at]);
        let open = rest.len() - tail.len();
        let mut depth = 0;
        let mut end = rest.len();
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        inner.push_str(&rest[open..end]);
        inner.push('\n');
        rest = &rest[end..];
    }
    outer.push_str(rest);
    (outer, inner)
}

/// The files each file uses, resolved from its paths.
fn graph(files: &[SourceFile]) -> BTreeMap<String, BTreeSet<String>> {
    let by_module: BTreeMap<Vec<String>, &SourceFile> = files.iter().map(|f| (f.module.clone(), f)).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let code = code_only(&f.text);
        let children: BTreeSet<String> = by_module
            .keys()
            .filter(|m| m.len() == f.module.len() + 1 && m.starts_with(&f.module))
            .map(|m| m.last().unwrap().clone())
            .collect();
        // The module `super` names from this file.
        let parent: Vec<String> = if f.is_dir_module || f.module.len() <= 1 {
            f.module[..f.module.len().saturating_sub(1)].to_vec()
        } else {
            f.module[..f.module.len() - 1].to_vec()
        };
        let mut targets = BTreeSet::new();
        // Inside an inline module (`mod tests { … }`), `super` is this file.
        let (outer, inner) = split_inline_modules(&code);
        let inline_paths = paths_in(&inner).into_iter().map(|p| match p.strip_prefix("super::") {
            Some(rest) => format!("self::{rest}"),
            None if p == "super" => "self".to_owned(),
            None => p,
        });
        for path in paths_in(&outer).into_iter().chain(inline_paths) {
            let segs: Vec<&str> = path.split("::").collect();
            let absolute: Vec<String> = match segs[0] {
                "crate" => segs[1..].iter().map(|s| s.to_string()).collect(),
                "meshcheck" if f.rel == "main.rs" => segs[1..].iter().map(|s| s.to_string()).collect(),
                "super" => {
                    let mut base = parent.clone();
                    let mut k = 1;
                    while segs.get(k) == Some(&"super") {
                        base.pop();
                        k += 1;
                    }
                    base.extend(segs[k..].iter().map(|s| s.to_string()));
                    base
                }
                "self" => {
                    let mut base = f.module.clone();
                    base.extend(segs[1..].iter().map(|s| s.to_string()));
                    base
                }
                first if children.contains(first) => {
                    let mut base = f.module.clone();
                    base.extend(segs.iter().map(|s| s.to_string()));
                    base
                }
                _ => continue,
            };
            // The longest prefix that names a file.
            let target = (1..=absolute.len()).rev().find_map(|n| by_module.get(&absolute[..n]));
            if let Some(t) = target
                && t.rel != f.rel
                && t.rel != "lib.rs"
            {
                targets.insert(t.rel.clone());
            }
        }
        edges.insert(f.rel.clone(), targets);
    }
    edges
}

/// The part a file belongs to: its top-level module (`main` for main.rs).
fn part(rel: &str) -> &str {
    rel.split('/').next().unwrap().trim_end_matches(".rs")
}

fn rank(part: &str) -> Option<usize> {
    LAYERS.iter().position(|line| line.contains(&part))
}

/// Circles between files: each strongly connected component of more than one
/// file, with one cycle through it for the message.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Tarjan's algorithm, iteratively small enough to recurse here.
    struct Tarjan<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            self.on.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on.remove(w);
                    comp.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// A shortest cycle through `from` inside `comp`, for the message.
fn cycle_through(edges: &BTreeMap<String, BTreeSet<String>>, comp: &[String]) -> Vec<String> {
    let inside: BTreeSet<&str> = comp.iter().map(String::as_str).collect();
    let from = comp[0].as_str();
    let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for w in edges.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !inside.contains(w) {
                continue;
            }
            if w == from {
                let mut path = vec![v.to_owned()];
                let mut cur = v;
                while cur != from {
                    cur = prev[cur];
                    path.push(cur.to_owned());
                }
                path.reverse();
                path.push(from.to_owned());
                return path;
            }
            if !prev.contains_key(w) {
                prev.insert(w, v);
                queue.push_back(w);
            }
        }
    }
    comp.to_vec()
}

fn load() -> (Vec<SourceFile>, BTreeMap<String, BTreeSet<String>>) {
    let mut files = Vec::new();
    collect(&src_root(), &mut files);
    let edges = graph(&files);
    (files, edges)
}

/// Every arrow that runs against the layers, as "from -> to".
fn upward_arrows(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, tos) in edges {
        let pf = part(from);
        if from == "lib.rs" {
            continue;
        }
        for to in tos {
            let pt = part(to);
            if pf == pt {
                continue;
            }
            match (rank(pf), rank(pt)) {
                (Some(a), Some(b)) if a < b => {}
                _ => out.push(format!("{from} ({pf}) -> {to} ({pt})")),
            }
        }
    }
    out
}

#[test]
fn every_part_is_in_a_layer() {
    let (files, _) = load();
    let unknown: BTreeSet<&str> =
        files.iter().map(|f| part(&f.rel)).filter(|p| *p != "lib" && rank(p).is_none()).collect();
    assert!(unknown.is_empty(), "parts missing from LAYERS (and docs/architecture.md): {unknown:?}");
}

#[test]
fn arrows_run_only_downward() {
    let (_, edges) = load();
    let up = upward_arrows(&edges);
    assert!(up.is_empty(), "{} arrows run against the layers (docs/architecture.md):\n{}", up.len(), up.join("\n"));
}

#[test]
fn no_two_files_use_each_other() {
    let (_, edges) = load();
    let found: Vec<String> = circles(&edges)
        .iter()
        .map(|comp| {
            format!(
                "{} (circle of {} files: {})",
                cycle_through(&edges, comp).join(" -> "),
                comp.len(),
                comp.join(", ")
            )
        })
        .collect();
    assert!(found.is_empty(), "{} circles between source files:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_reader_sees_the_paths_code_can_write() {
    // The parser itself, on the forms the rule depends on.
    let code = code_only(
        "use crate::{asset::{scene, data::DocData}, report::Report as R};\n\
         // use crate::server;\n\
         let s = \"crate::cli\"; let x = crate::geom::mesh::weld(&a);\n\
         use super::ctx::Ctx; fn f<'a>(c: char) -> bool { c == '{' }\n",
    );
    let paths = paths_in(&code);
    for want in
        ["crate::asset::scene", "crate::asset::data::DocData", "crate::report::Report", "crate::geom::mesh::weld"]
    {
        assert!(paths.iter().any(|p| p == want), "{want} not in {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.contains("server") || p.contains("cli")), "{paths:?}");
    assert!(paths.iter().any(|p| p == "super::ctx::Ctx"));
    let (outer, inner) =
        split_inline_modules("use crate::a::B;\nmod tests {\n use super::*; fn f() { {} }\n}\nmod c;\nuse crate::d;");
    assert!(outer.contains("crate::a::B") && outer.contains("crate::d") && outer.contains("mod c;"), "{outer}");
    assert!(inner.contains("use super::*") && !outer.contains("super"), "{inner}");
    // Circles are found and named.
    let edges: BTreeMap<String, BTreeSet<String>> =
        [("a.rs", vec!["b.rs"]), ("b.rs", vec!["c.rs"]), ("c.rs", vec!["a.rs"]), ("d.rs", vec!["a.rs"])]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
            .collect();
    let found = circles(&edges);
    assert_eq!(found, vec![vec!["a.rs".to_owned(), "b.rs".to_owned(), "c.rs".to_owned()]]);
    assert_eq!(cycle_through(&edges, &found[0]), ["a.rs", "b.rs", "c.rs", "a.rs"]);
    // Arrows against the layers are named; arrows down and within a part are not.
    let edges: BTreeMap<String, BTreeSet<String>> =
        [("geom/mesh.rs", vec!["asset/data.rs", "error.rs", "geom/uv.rs"]), ("render/gpu.rs", vec!["vision/mod.rs"])]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
            .collect();
    assert_eq!(
        upward_arrows(&edges),
        ["geom/mesh.rs (geom) -> asset/data.rs (asset)", "render/gpu.rs (render) -> vision/mod.rs (vision)"]
    );
}

/// Lines of a source file with `//` comments (and doc comments) removed;
/// string literals are kept, since an ID written in a message is written.
fn without_comments(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = ' ';
        let mut cut = line.len();
        for (i, c) in line.char_indices() {
            if c == '"' && prev != '\\' {
                in_str = !in_str;
            }
            if !in_str && c == '/' && prev == '/' {
                cut = i - 1;
                break;
            }
            prev = c;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn all_source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all_source_files(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("rs" | "html" | "js" | "mjs" | "wgsl")) {
            out.push(path);
        }
    }
}

/// Issue 18: a check is defined once, beside its function; its ID is written
/// (outside comments) in at most two hand-written source files under src/:
/// its family file and, at most, one other. Everything else that names
/// checks (the catalog, docs/checks.md, the README's table, the schemas,
/// the demo page's labels) is generated from the definitions.
#[test]
fn a_check_id_is_written_in_at_most_two_source_files() {
    let mut files = Vec::new();
    all_source_files(&src_root(), &mut files);
    files.sort();
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            let rel = p.strip_prefix(src_root()).unwrap().to_string_lossy().replace('\\', "/");
            (rel, without_comments(&std::fs::read_to_string(p).unwrap()))
        })
        .collect();
    let mut over = Vec::new();
    for id in meshcheck::checks::catalog::ids() {
        let mut family = None;
        let in_files: Vec<&str> = texts
            .iter()
            .filter(|(_, t)| {
                t.match_indices(id).any(|(i, _)| !t[i + id.len()..].starts_with(|c: char| c.is_ascii_digit()))
            })
            .map(|(rel, t)| {
                if t.contains(&format!("id: \"{id}\"")) {
                    family = Some(rel.clone());
                }
                rel.as_str()
            })
            .collect();
        assert!(family.is_some(), "{id} is defined (`id: \"{id}\"`) in no source file");
        if in_files.len() > 2 {
            over.push(format!("{id}: {}", in_files.join(", ")));
        }
    }
    assert!(over.is_empty(), "check IDs written in more than two source files:\n{}", over.join("\n"));
}

#[test]
fn the_comment_stripper_keeps_strings() {
    assert_eq!(without_comments("let a = \"x//y\"; // GEO-002\n/// PERF-001\n"), "let a = \"x//y\"; \n\n");
}
