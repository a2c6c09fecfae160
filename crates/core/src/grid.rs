//! Launch geometry.

/// Grid and block dimensions plus dynamic shared memory for one launch.
/// Plain numbers: each backend turns them into its own launch call (the
/// CUDA layer into its launch dims, the CPU backend into workgroup loops).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl Grid {
    /// Threads per block that [`Grid::for_elems`] uses.
    pub const DEFAULT_BLOCK: u32 = 256;

    /// One thread per element, 256 threads a block; at least one block, so
    /// a kernel that checks `i < n` can be launched for `n = 0`.
    pub fn for_elems(n: usize) -> Grid {
        Grid::for_elems_with_block(n, Grid::DEFAULT_BLOCK)
    }

    /// One thread per element with `block` threads a block.
    pub fn for_elems_with_block(n: usize, block: u32) -> Grid {
        let block = block.max(1);
        let blocks = n.div_ceil(block as usize).clamp(1, i32::MAX as usize) as u32;
        Grid {
            grid: (blocks, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Explicit grid and block dimensions.
    pub fn new(grid: (u32, u32, u32), block: (u32, u32, u32)) -> Grid {
        Grid {
            grid,
            block,
            shared_mem_bytes: 0,
        }
    }

    /// The same grid with `bytes` of dynamic shared memory per block.
    pub fn with_shared_mem(mut self, bytes: u32) -> Grid {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Total threads launched.
    pub fn threads(&self) -> u64 {
        let (g, b) = (self.grid, self.block);
        [g.0, g.1, g.2, b.0, b.1, b.2]
            .iter()
            .map(|&d| d as u64)
            .product()
    }
}
