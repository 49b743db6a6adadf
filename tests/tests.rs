//! The one integration-test binary (ripgrep's layout): every module below
//! links into it, so the suite builds once. Modules that need a feature
//! (`render`, `vision`, `serve`, `mcp`) are left out of builds without it;
//! CI runs the suite with and without default features. What the modules
//! share is the test support (`support/`: the code-built assets under
//! `testkit`, the binary and corpus helpers under `util`, the loopback
//! `fakes`).

mod anm;
mod architecture;
#[cfg(feature = "serve")]
mod billing;
#[cfg(feature = "serve")]
mod blob_store;
mod checks;
mod checks_geo_perf;
mod ci_formats;
mod cli;
mod compare;
mod config;
mod corpus;
mod distribution;
#[cfg(feature = "serve")]
mod faults;
mod generated;
mod geometry;
mod hostile;
mod lenient;
#[cfg(feature = "mcp")]
mod mcp;
#[cfg(feature = "serve")]
mod multinode;
#[cfg(feature = "serve")]
mod observability;
mod overdraw;
#[cfg(feature = "render")]
mod render;
#[cfg(feature = "serve")]
mod render_workers;
mod report_card;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_media;
mod spec001;
#[cfg(feature = "serve")]
mod store_conformance;
mod support;
mod uv;
mod uv_mat;
#[cfg(all(feature = "render", feature = "vision"))]
mod vision;

#[cfg(feature = "serve")]
use support::fakes;
use support::{testkit, util};
