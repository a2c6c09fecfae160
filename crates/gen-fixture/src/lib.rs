//! The fixture library of `cargo xtask gen`, in its three generated tiers.
//!
//! `specs/fixture.yaml` binds the C++ class in `tests/fixtures/counter`;
//! `cargo xtask gen` writes `src/generated/` (Rust), `bridge/fixture/` (C++)
//! and `include/fx.h` (C). Layer contract:
//! - [`generated::bridge`] (tier 1): the `#[cxx::bridge]`; C++ exceptions are `Err`.
//! - [`generated::safe`] (tier 3, re-exported here): owning handles with RAII,
//!   `Result<_, Error>` everywhere. No `unsafe`.
//! - [`generated::capi`] (tier 2): the `extern "C"` ABI over the safe tier,
//!   linked by C programs through this crate's staticlib.
//!
//! Nothing in this crate is written by hand except this file and build.rs.

pub mod generated;

pub use generated::safe::*;
