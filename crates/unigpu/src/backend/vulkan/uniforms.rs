//! The uniform buffers that hold a kernel launch's scalar arguments (and
//! a macro kernel's array lengths and kernel number), kept for reuse.
//!
//! A launch used to create one buffer for its scalars, mapped at creation,
//! every time: a buffer allocation, a staging copy recorded before the
//! dispatch and a buffer to free after it. On an H200 (NVIDIA's Vulkan
//! driver, 2026-11-28) a macro saxpy over 2^16 elements took 59 µs a
//! launch against the built-in axpy's 8.8 µs, whose scalars are push
//! constants. A loop launches a kernel with the same scalars again and
//! again, so the buffers are kept by their bytes: a buffer is never
//! written after it is made, so any number of launches in flight may read
//! the same one.

use std::sync::Mutex;

use crate::error::Result;
use crate::lock::lock;

/// Buffers kept, the most recently used first: enough for the scalars of
/// the kernels a loop body launches, few enough that a search is a handful
/// of short comparisons and the memory they hold stays small (each a few
/// hundred bytes).
const KEPT: usize = 32;

/// The device's kept uniform buffers, by their bytes.
#[derive(Debug, Default)]
pub(crate) struct Uniforms {
    kept: Mutex<Vec<(Vec<u8>, wgpu::Buffer)>>,
}

impl Uniforms {
    /// A uniform buffer holding exactly `bytes`: a kept one, or `make`'s
    /// (then kept, the least recently used dropped past [`KEPT`]). `make`
    /// must return a buffer holding `bytes` that nothing writes again.
    pub(crate) fn get(
        &self,
        bytes: &[u8],
        make: impl FnOnce() -> Result<wgpu::Buffer>,
    ) -> Result<wgpu::Buffer> {
        {
            let mut kept = lock(&self.kept);
            if let Some(at) = kept.iter().position(|(b, _)| b.as_slice() == bytes) {
                let hit = kept.remove(at);
                let buffer = hit.1.clone();
                kept.insert(0, hit);
                return Ok(buffer);
            }
        }
        let buffer = make()?;
        let mut kept = lock(&self.kept);
        kept.insert(0, (bytes.to_vec(), buffer.clone()));
        kept.truncate(KEPT);
        Ok(buffer)
    }
}
