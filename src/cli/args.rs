//! The command line's grammar: the top-level parser and its subcommands.
//! Each subcommand's arguments live in its own file beside its code.

#[cfg(all(feature = "render", feature = "vision"))]
use super::inspect_cmd;
#[cfg(feature = "mcp")]
use super::mcp_cmd;
#[cfg(feature = "render")]
use super::render_cmd;
#[cfg(feature = "serve")]
use super::serve_cmd;
use super::{catalog_cmd, compare_cmd, config_cmd, validate};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// meshcheck validates glTF 2.0 assets (GLB, .gltf with its resources, or a
/// .zip bundle) and writes a machine-readable report card: per-check status
/// with measured and threshold values, and a pass/warn/fail verdict.
#[derive(Debug, Parser)]
#[command(name = "meshcheck", version, about, long_about = None, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate assets (files or folders) and print their reports.
    // Boxed: its many flags would make every `Command` as large as it.
    Validate(Box<validate::ValidateArgs>),
    /// Compare two assets or two reports: status changes and deltas; exit 1 when NEW is worse.
    Compare(compare_cmd::CompareArgs),
    /// List the check catalog with the thresholds of a profile.
    Checks(catalog_cmd::ChecksArgs),
    /// Show the built-in budget profiles side by side.
    Profiles(catalog_cmd::ProfilesArgs),
    /// Show the settings a file gets from meshcheck.toml and the flags, and where each came from.
    Config(config_cmd::ConfigArgs),
    /// Render stills (and a turntable GIF) of one asset under the studio rig.
    #[cfg(feature = "render")]
    Render(render_cmd::RenderArgs),
    /// Ask a vision model about the renders (VIS-001, VIS-002, VIS-003).
    #[cfg(all(feature = "render", feature = "vision"))]
    Inspect(inspect_cmd::InspectArgs),
    /// Run the /v1 HTTP API (accounts, credits, uploads, jobs, webhooks).
    #[cfg(feature = "serve")]
    Serve(serve_cmd::ServeArgs),
    /// Create and list service accounts (in the server's data folder).
    #[cfg(feature = "serve")]
    Accounts(serve_cmd::AccountsArgs),
    /// Create and revoke API keys of service accounts.
    #[cfg(feature = "serve")]
    Keys(serve_cmd::KeysArgs),
    /// Serve meshcheck's tools to agents over MCP on stdio (docs/mcp.md).
    #[cfg(feature = "mcp")]
    Mcp(mcp_cmd::McpArgs),
    /// Regenerate completions, man pages, schemas and docs/checks.md (for maintainers).
    #[command(hide = true)]
    Generate(GenerateArgs),
    /// Draw stills over stdin and stdout (started by `meshcheck serve`, and by
    /// `meshcheck validate --mode full` for more than one file).
    #[command(hide = true)]
    #[cfg(feature = "render")]
    RenderWorker,
}

/// Arguments of the hidden `meshcheck generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The repository root to write into.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}
