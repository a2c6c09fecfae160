//! What goes into a compile and where the result came from; plain values
//! that the public `Context::compile` and every backend's compiler share.

use std::path::PathBuf;

pub use unigpu_core::image::ImageFormat;

/// Options for [`crate::Context::compile_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// `-I` folders for `#include "..."`.
    pub include_paths: Vec<PathBuf>,
    /// `-D NAME` or `-D NAME=VALUE`.
    pub defines: Vec<(String, Option<String>)>,
    /// Target (major, minor); the device's own when `None`.
    pub arch: Option<(i32, i32)>,
    /// Any other NVRTC option, passed through.
    pub extra: Vec<String>,
}

impl CompileOptions {
    pub fn include(mut self, path: impl Into<PathBuf>) -> Self {
        self.include_paths.push(path.into());
        self
    }

    pub fn define(mut self, name: &str, value: Option<&str>) -> Self {
        self.defines
            .push((name.to_string(), value.map(str::to_string)));
        self
    }

    pub fn arch(mut self, major: i32, minor: i32) -> Self {
        self.arch = Some((major, minor));
        self
    }

    pub fn option(mut self, option: &str) -> Self {
        self.extra.push(option.to_string());
        self
    }
}

/// Where a compiled module came from: the answer to "did the cache work?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// NVRTC compiled it now.
    Compiled,
    /// This process had compiled the same program before.
    MemoryCache,
    /// Loaded from the on-disk cache.
    DiskCache,
    /// Nothing compiled from the CUDA source: the CPU backend runs a
    /// kernel's CPU code, the vulkan backend its WGSL or SPIR-V.
    NotCompiled,
    /// Loaded from precompiled code of this format
    /// ([`crate::Context::load_module`]).
    Precompiled(ImageFormat),
}
