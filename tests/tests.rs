//! The one integration-test binary (ripgrep's layout): every module below
//! links into it, so the suite builds once.

mod architecture;
mod billing;
mod checks;
mod cli;
mod corpus;
mod faults;
mod generated;
mod geometry;
mod hostile;
mod lenient;
mod render;
mod serve;
mod serve_media;
mod spec001;
mod util;
mod uv;
mod vision;
