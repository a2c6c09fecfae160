//! What a kernel may be launched with on its device, read once when it is
//! loaded, and the check every launch passes before the driver is called:
//! the driver's own answer to a launch over a limit is a bare
//! `CUDA_ERROR_INVALID_VALUE` (or `LAUNCH_OUT_OF_RESOURCES`), which names
//! neither the dimension nor the limit.

use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute_enum};
use cudarc::driver::{CudaContext, CudaFunction};

use crate::error::{Context as _, Result};

/// One kernel's launch limits on one device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// The kernel's own bound on threads a block, which its register use
    /// may set below the device's.
    pub max_threads_per_block: u32,
    pub max_block: [u32; 3],
    pub max_grid: [u32; 3],
    /// Dynamic shared memory a block of this kernel may ask for without
    /// raising the kernel's attribute (48 KiB less its static shared
    /// memory, by default).
    pub max_dynamic_shared: u32,
}

impl LaunchLimits {
    pub(crate) fn read(ctx: &CudaContext, func: &CudaFunction) -> Result<LaunchLimits> {
        use CUdevice_attribute::*;
        let device = |a| {
            ctx.attribute(a)
                .call("cuDeviceGetAttribute")
                .map(|v| v.max(0) as u32)
        };
        let function = |a| {
            func.get_attribute(a)
                .call("cuFuncGetAttribute")
                .map(|v| v.max(0) as u32)
        };
        Ok(LaunchLimits {
            max_threads_per_block: function(
                CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            )?,
            max_block: [
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid: [
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                device(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_dynamic_shared: function(
                CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            )?,
        })
    }

    /// Why a launch of `grid` blocks of `block` threads with
    /// `dynamic_shared` bytes breaks these limits, if it does; the text
    /// names the dimension, the value and the limit.
    pub fn check(
        &self,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        dynamic_shared: u32,
    ) -> std::result::Result<(), String> {
        let (g, b) = ([grid.0, grid.1, grid.2], [block.0, block.1, block.2]);
        if g.contains(&0) || b.contains(&0) {
            return Err(format!(
                "grid {grid:?} of blocks {block:?}: every dimension must be at least 1"
            ));
        }
        for (i, axis) in ["x", "y", "z"].iter().enumerate() {
            if b[i] > self.max_block[i] {
                return Err(format!(
                    "block.{axis} = {} is over the device's limit of {} for block.{axis}",
                    b[i], self.max_block[i]
                ));
            }
        }
        let threads = b.iter().map(|&d| u64::from(d)).product::<u64>();
        if threads > u64::from(self.max_threads_per_block) {
            return Err(format!(
                "a block of {block:?} is {threads} threads; this kernel may have at most {} a block \
                 on this device (its register use sets that bound)",
                self.max_threads_per_block
            ));
        }
        for (i, axis) in ["x", "y", "z"].iter().enumerate() {
            if g[i] > self.max_grid[i] {
                return Err(format!(
                    "grid.{axis} = {} is over the device's limit of {} for grid.{axis}",
                    g[i], self.max_grid[i]
                ));
            }
        }
        if dynamic_shared > self.max_dynamic_shared {
            return Err(format!(
                "{dynamic_shared} bytes of dynamic shared memory a block; this kernel may ask for \
                 at most {} on this device",
                self.max_dynamic_shared
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::LaunchLimits;

    /// The H100/H200's limits, with a kernel whose registers allow 512.
    const HOPPER: LaunchLimits = LaunchLimits {
        max_threads_per_block: 512,
        max_block: [1024, 1024, 64],
        max_grid: [i32::MAX as u32, 65535, 65535],
        max_dynamic_shared: 48 * 1024,
    };

    #[test]
    fn random_launches_pass_exactly_when_every_limit_holds() {
        let mut rng = rand::rng();
        let mut pick = |max: u32| match rng.random_range(0..4) {
            0 => 0,
            1 => max.saturating_add(rng.random_range(1..8)),
            _ => rng.random_range(1..=max),
        };
        for _ in 0..10_000 {
            let l = HOPPER;
            let block = (pick(64), pick(16), pick(2));
            let grid = (pick(1 << 20), pick(65535), pick(65535));
            let shared = pick(l.max_dynamic_shared);
            let (g, b) = ([grid.0, grid.1, grid.2], [block.0, block.1, block.2]);
            let fits = !g.contains(&0)
                && !b.contains(&0)
                && (0..3).all(|i| b[i] <= l.max_block[i] && g[i] <= l.max_grid[i])
                && b.iter().map(|&d| u64::from(d)).product::<u64>()
                    <= u64::from(l.max_threads_per_block)
                && shared <= l.max_dynamic_shared;
            let got = l.check(grid, block, shared);
            assert_eq!(got.is_ok(), fits, "{grid:?} {block:?} {shared}: {got:?}");
        }
    }

    #[test]
    fn each_error_names_the_dimension_the_value_and_the_limit() {
        let l = HOPPER;
        let err = |g, b, s| l.check(g, b, s).unwrap_err();
        let e = err((1, 1, 1), (1, 1, 65), 0);
        assert!(
            e.contains("block.z = 65") && e.contains("limit of 64"),
            "{e}"
        );
        let e = err((1, 1, 1), (1024, 1, 1), 0);
        assert!(
            e.contains("1024 threads") && e.contains("at most 512"),
            "{e}"
        );
        let e = err((1, 70000, 1), (32, 1, 1), 0);
        assert!(e.contains("grid.y = 70000") && e.contains("65535"), "{e}");
        let e = err((1, 1, 1), (32, 1, 1), 100_000);
        assert!(e.contains("100000 bytes") && e.contains("49152"), "{e}");
        let e = err((0, 1, 1), (32, 1, 1), 0);
        assert!(e.contains("at least 1"), "{e}");
        assert!(l.check((1 << 30, 65535, 1), (512, 1, 1), 49152).is_ok());
    }
}
