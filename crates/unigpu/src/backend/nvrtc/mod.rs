//! CUDA C++ compiled by NVRTC into modules loaded on a device, with the
//! two caches of compiled code (this process's, and the files on disk),
//! and precompiled code (PTX, CUBIN, fatbin) loaded as the same modules.
//! What the cuda and torch backends share for kernels, being two ways to
//! drive the same CUDA devices. Not a backend: it names none, and neither
//! backend folder is used here.

pub(crate) mod cache;
mod compile;
mod image;

pub(crate) use compile::{CudaProgram, LoadedModule, compile};
pub(crate) use image::load_image;
