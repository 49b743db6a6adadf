//! No code: this crate exists for its dependencies' features (Cargo.toml).
#![no_std]
