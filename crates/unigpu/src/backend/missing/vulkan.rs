//! The vulkan backend in a build without the `vulkan` feature:
//! `Missing<Kind>` (see `missing/mod.rs`), and the stand-in of its shader
//! kernels. wgpu is not compiled. Kernels may still carry WGSL or SPIR-V:
//! it is kept, never run (no backend of this build runs shaders).

use super::{Absent, Missing};
use crate::backend::Backend;
use crate::error::Result;

/// Names the absent vulkan backend.
#[derive(Debug)]
pub(crate) struct Kind;

impl Absent for Kind {
    const KIND: Backend = Backend::Vulkan;
    const REASON: &'static str =
        "unigpu was built without the `vulkan` feature (wgpu is not in this build)";
}

/// The vulkan backend, absent from this build.
pub(crate) type Vulkan = Missing<Kind>;

/// A kernel's WGSL or SPIR-V in a build that cannot read or run it: only
/// its form is kept.
#[derive(Debug, Clone)]
pub(crate) struct ShaderKernel(&'static str);

impl ShaderKernel {
    pub(crate) fn wgsl(_kernel: &str, _source: &str) -> Result<ShaderKernel> {
        Ok(ShaderKernel("wgsl"))
    }

    pub(crate) fn spirv(_kernel: &str, _bytes: &[u8]) -> Result<ShaderKernel> {
        Ok(ShaderKernel("spir-v"))
    }

    pub(crate) fn form(&self) -> &'static str {
        self.0
    }

    pub(crate) fn with_word_arrays(
        self,
        _arrays: &[(usize, crate::element::DType)],
    ) -> ShaderKernel {
        self
    }

    /// Unknown: nothing here reads shaders.
    pub(crate) fn params(&self) -> Option<Vec<crate::kernel::signature::ParamKind>> {
        None
    }
}
