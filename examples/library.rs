//! Using meshcheck as a library: validate bytes and act on the structured
//! result, as the CLI and the service do.
//!
//! `cargo run --example library -- path/to/model.glb`

use meshcheck::asset::Input;
use meshcheck::engine::{self, Options};
use meshcheck::report::Status;

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "examples/textured-cube.glb".into());
    let input = Input::from_path(std::path::Path::new(&path)).expect("readable file");
    let mut opts = Options::default();
    opts.profile.apply_override("max_tris", 50_000.0).expect("a known key");
    match engine::validate(input, &opts) {
        Ok(report) => {
            println!("{}: {}", path, report.verdict.as_str());
            for c in report.checks.iter().filter(|c| c.status != Status::Pass) {
                println!("  {} {} {}", c.id, c.status.as_str(), c.message);
            }
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(e.code.exit_code());
        }
    }
}
