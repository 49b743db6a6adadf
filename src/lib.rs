//! meshcheck: validates glTF 2.0 assets and writes a machine-readable report card.
//!
//! One engine serves every face: the CLI (`meshcheck validate`) and, later,
//! the HTTP service call [`engine::validate`] with bytes plus options and get
//! a [`report::Report`] or an [`error::Error`] carrying one of the
//! specification's error codes.
//!
//! - [`asset`] reads GLB, .gltf and zip inputs into a document plus a flattened [`asset::scene::Scene`].
//! - [`checks`] holds the check catalog and one file per check family.
//! - [`geom`] holds pure geometry on plain arrays.
//! - [`report`] and [`profile`] define the report card and the budgets.
//! - [`server`] is `meshcheck serve`, the /v1 HTTP API; [`store`] its storage.
//!
//! Features: `render` (wgpu), `vision` (HTTP to a vision model), `serve`
//! (axum, tokio, SQLite; needs both others) and `mcp` (the tools for agents
//! over the Model Context Protocol) are on by default;
//! `--no-default-features` builds the validate-only CLI. docs/architecture.md
//! describes the parts and which may use which.

pub mod asset;
pub mod checks;
pub mod cli;
pub mod engine;
pub mod error;
pub mod geom;
pub mod memory;
pub mod profile;
#[cfg(feature = "render")]
pub mod render;
pub mod report;
#[cfg(feature = "serve")]
pub mod server;
#[cfg(feature = "serve")]
pub mod store;
#[cfg(test)]
pub(crate) mod testing;
/// The unit tests count their allocations ([`testing::Counting`]).
#[cfg(test)]
#[global_allocator]
static COUNTING: testing::Counting = testing::Counting;
pub mod validator;
#[cfg(feature = "vision")]
pub mod vision;
