//! The vulkan backend in a build without the `vulkan` feature:
//! `Missing<Kind>` (see `missing/mod.rs`), and the stand-in of its shader
//! kernels. wgpu is not compiled. Kernels may still carry WGSL or SPIR-V:
//! it is kept, never run (no backend of this build runs shaders).

use super::{Absent, Missing};
use crate::backend::Backend;
use crate::backend::code::{KernelCode, ShaderSource};
use crate::element::DType;
use crate::error::Result;

/// Names the absent vulkan backend.
#[derive(Debug)]
pub(crate) struct Kind;

impl Absent for Kind {
    const KIND: Backend = Backend::Vulkan;
    const DLPACK_DEVICE_TYPE: i32 = unigpu_core::dlpack::ffi::kDLVulkan;
    const REASON: &'static str =
        "unigpu was built without the `vulkan` feature (wgpu is not in this build)";

    /// The shader kept unread, its form only: a kernel may carry one in
    /// any build, and none here runs it.
    fn shader_kernel(
        _name: &str,
        source: ShaderSource<'_>,
        _word_arrays: &[(usize, DType)],
    ) -> Result<KernelCode> {
        // Only the form is kept: nothing in this build reads shaders.
        let form = match source {
            ShaderSource::Wgsl(text) => {
                let _ = text;
                "wgsl"
            }
            ShaderSource::Spirv(words) => {
                let _ = words;
                "spir-v"
            }
        };
        Ok(KernelCode::Shader(ShaderKernel(form)))
    }
}

/// The vulkan backend, absent from this build.
pub(crate) type Vulkan = Missing<Kind>;

/// A kernel's WGSL or SPIR-V in a build that cannot read or run it: only
/// its form is kept.
#[derive(Debug, Clone)]
pub(crate) struct ShaderKernel(&'static str);

impl ShaderKernel {
    pub(crate) fn form(&self) -> &'static str {
        self.0
    }

    /// Unknown: nothing here reads shaders.
    pub(crate) fn params(&self) -> Option<Vec<crate::kernel::signature::ParamKind>> {
        None
    }
}
