//! Generated files (completions/, man/, schemas/, docs/checks.md) must match
//! what the code generates now; `meshcheck generate` (or MESHCHECK_BLESS=1
//! on this test) rewrites them.

use crate::util;

/// The generated files describe the full build (every command and schema).
#[test]
#[cfg(all(feature = "render", feature = "vision", feature = "serve"))]
fn generated_files_are_fresh() {
    let bless = std::env::var_os("MESHCHECK_BLESS").is_some();
    let mut stale = Vec::new();
    for (rel, want) in meshcheck::cli::generate::files(&util::root()) {
        let path = util::root().join(&rel);
        if bless {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &want).unwrap();
            continue;
        }
        match std::fs::read(&path) {
            Ok(got) if got == want => {}
            _ => stale.push(rel.display().to_string()),
        }
    }
    assert!(stale.is_empty(), "stale generated files (run `cargo run -- generate`): {stale:?}");
}

#[test]
fn schemas_are_draft_2020_12() {
    for name in ["report", "check_result", "meshcheck-toml"] {
        let text = std::fs::read_to_string(util::root().join(format!("schemas/{name}.json"))).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["$schema"], "https://json-schema.org/draft/2020-12/schema");
    }
}
