//! The command line: clap definitions and dispatch. `main.rs` only calls [`main`].
//!
//! Subcommands live one per file with their arguments; the top-level
//! grammar is `args.rs`, errors on the terminal `diag.rs`, output formats
//! (table, JSON, JUnit) `output.rs`, the generated files (completions, man
//! pages, schemas, docs/checks.md) `generate.rs`. The CI formats speak of
//! findings (`findings.rs`), one file each: `sarif.rs`, `annotations.rs`
//! (GitHub), `gitlab.rs`, `markdown.rs`; `baseline.rs` accepts findings;
//! meshcheck.toml's model and resolution `config.rs`.
//! The HTML report card is `html.rs`; the comparison behind `compare`
//! `compare.rs` (with `stilldiff.rs`).

pub mod annotations;
pub mod args;
pub mod baseline;
pub mod catalog_cmd;
pub mod compare;
pub mod compare_cmd;
pub mod config;
pub mod config_cmd;
pub mod diag;
pub mod escape;
pub mod findings;
pub mod generate;
pub mod gitlab;
pub mod html;
#[cfg(all(feature = "render", feature = "vision"))]
pub mod inspect_cmd;
pub mod markdown;
#[cfg(feature = "mcp")]
pub mod mcp_cmd;
pub mod output;
#[cfg(feature = "render")]
pub mod render_cmd;
pub mod sarif;
#[cfg(feature = "serve")]
pub mod serve_cmd;
pub mod stilldiff;
pub mod validate;
pub mod values;

pub use args::{Cli, Command};
use clap::Parser;
pub use diag::{colour_on, print_error};

/// Runs the CLI and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    let result = match cli.command {
        Command::Validate(args) => validate::run(*args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Checks(args) => catalog_cmd::checks(args),
        Command::Profiles(args) => catalog_cmd::profiles(args),
        Command::Config(args) => config_cmd::run(args),
        #[cfg(feature = "render")]
        Command::Render(args) => render_cmd::run(args),
        #[cfg(all(feature = "render", feature = "vision"))]
        Command::Inspect(args) => inspect_cmd::run(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => serve_cmd::serve(args),
        #[cfg(feature = "render")]
        Command::RenderWorker => Ok(crate::render::worker::serve_stdio()),
        #[cfg(feature = "serve")]
        Command::Accounts(args) => serve_cmd::accounts(args),
        #[cfg(feature = "serve")]
        Command::Keys(args) => serve_cmd::keys(args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp_cmd::run(args),
        Command::Generate(args) => generate::write_all(&args.dir).map(|_| 0),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            print_error(&e, None);
            e.code.exit_code()
        }
    }
}
