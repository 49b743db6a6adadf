//! The one integration-test binary (ripgrep's layout): every module below
//! links into it, so the suite builds once. Modules that need a feature
//! (`render`, `vision`, `serve`) are left out of builds without it; CI runs
//! the suite with and without default features.

mod architecture;
#[cfg(feature = "serve")]
mod billing;
mod checks;
mod cli;
mod compare;
mod corpus;
#[cfg(feature = "serve")]
mod fakes;
#[cfg(feature = "serve")]
mod faults;
mod generated;
mod geometry;
mod hostile;
mod lenient;
#[cfg(feature = "render")]
mod render;
mod report_card;
#[cfg(feature = "serve")]
mod serve;
#[cfg(feature = "serve")]
mod serve_media;
mod spec001;
mod testkit;
mod util;
mod uv;
#[cfg(all(feature = "render", feature = "vision"))]
mod vision;
