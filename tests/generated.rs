//! Generated files (completions/, man/, schemas/, docs/checks.md) and the
//! generated Credits table of docs/service.md must match what the code
//! generates now; `meshcheck generate` (or MESHCHECK_BLESS=1 on these tests)
//! rewrites them.

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

/// docs/service.md's Credits table is written from the price list
/// (`server::prices::markdown`), docs/billing.md's billing routes cost what
/// the list's free row says, and the OpenAPI document quotes no price the
/// list did not fill in.
#[test]
#[cfg(feature = "serve")]
fn the_prices_in_the_docs_are_the_price_list() {
    use meshcheck::server::prices::{self, Priced};
    const BEGIN: &str = "<!-- prices: generated from src/server/prices.rs -->\n";
    const END: &str = "<!-- /prices -->";
    let path = util::root().join("docs/service.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        panic!("docs/service.md lacks the markers {BEGIN:?} and {END:?} around its Credits table");
    };
    let want = format!("{}{BEGIN}{}{}", &text[..begin], prices::markdown(), &text[end..]);
    if std::env::var_os("MESHCHECK_BLESS").is_some() {
        std::fs::write(&path, &want).unwrap();
    } else {
        assert!(
            text == want,
            "docs/service.md's Credits table is stale: run MESHCHECK_BLESS=1 cargo test -- generated"
        );
    }

    let billing = std::fs::read_to_string(util::root().join("docs/billing.md")).unwrap();
    for route in ["`POST /v1/billing/checkout`", "`POST /v1/billing/portal`"] {
        let line = billing
            .lines()
            .find(|l| l.starts_with(&format!("| {route}")))
            .unwrap_or_else(|| panic!("docs/billing.md has no row for {route}"));
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert_eq!(cells[3], prices::credits(Priced::Free).to_string(), "docs/billing.md's credits of {route}");
    }

    let openapi = meshcheck::server::openapi::document("http://meshcheck.test").to_string();
    assert!(!openapi.contains("{price:"), "a price placeholder the list does not know is left in the OpenAPI document");
}
