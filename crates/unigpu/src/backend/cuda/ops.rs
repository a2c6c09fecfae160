//! The built-in ops on the CUDA backend: launches of the kernels in
//! `ops_src`, and cuBLAS for matmul.

use unigpu_cuda_safe::{DeviceBuffer, KernelParam};

use super::Cuda;
use super::device::Stream;
use crate::backend::contract::BuiltinOps;
use crate::element::Element;
use crate::error::Result;
use crate::ops::{Binary, Float, Reduce, Unary};
use unigpu_core::GemmShape;
use unigpu_core::Grid;
use unigpu_core::Scalar;

/// Most blocks of a grid-stride loop; past this, threads loop.
const MAX_BLOCKS: usize = 1 << 20;
/// Reductions use this many blocks at most, so the second pass is one block.
const REDUCE_BLOCKS: usize = 1024;

fn grid(n: usize, max_blocks: usize) -> Grid {
    let mut g = Grid::for_elems(n);
    g.grid.0 = g.grid.0.min(max_blocks as u32);
    g
}

/// Threads an element-wise map needs: one per 16-byte vector.
fn vectors<T>(n: usize) -> usize {
    n.div_ceil(16 / std::mem::size_of::<T>())
}

fn launch(
    stream: &Stream,
    name: &str,
    n: usize,
    max_blocks: usize,
    params: &mut [KernelParam<'_>],
) -> Result<()> {
    let f = stream.device.builtin(name)?;
    let dims = unigpu_cuda_safe::launch_dims(grid(n, max_blocks));
    Ok(unigpu_cuda_safe::launch(&stream.handle, &f, dims, params)?)
}

fn param<'a, T: Element>(v: T) -> KernelParam<'a> {
    KernelParam::from(Scalar::new(v))
}

/// The name of the element-wise kernel `ug_{op}_{T}`.
fn map_name<T: Float>(op: &str) -> String {
    format!("ug_{op}_{}", T::SUFFIX)
}

/// Launches the element-wise kernel `ug_{op}_{T}` over `n` elements, with
/// `params` followed by `n`.
fn map<T: Float>(
    stream: &Stream,
    op: &str,
    n: usize,
    mut params: Vec<KernelParam<'_>>,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    params.push(param(n as u64));
    launch(
        stream,
        &map_name::<T>(op),
        vectors::<T>(n),
        MAX_BLOCKS,
        &mut params,
    )
}

impl BuiltinOps for Cuda {
    fn fill<T: Element>(stream: &Stream, x: &mut DeviceBuffer<T>, value: T) -> Result<()> {
        let n = x.len();
        if n == 0 {
            return Ok(());
        }
        let bytes = bytemuck::bytes_of(&value);
        // The kernels fill raw bits, so one per element width serves every type.
        let (name, v) = match bytes.len() {
            1 => ("ug_fill_b1", param(bytes[0])),
            2 => (
                "ug_fill_b2",
                param(half::f16::from_bits(u16::from_le_bytes([
                    bytes[0], bytes[1],
                ]))),
            ),
            4 => (
                "ug_fill_b4",
                param(u32::from_le_bytes(bytes.try_into().unwrap_or_default())),
            ),
            _ => (
                "ug_fill_b8",
                param(u64::from_le_bytes(bytes.try_into().unwrap_or_default())),
            ),
        };
        launch(
            stream,
            name,
            n,
            MAX_BLOCKS,
            &mut [KernelParam::BufferMut(x), v, param(n as u64)],
        )
    }

    fn binary<T: Float>(
        stream: &Stream,
        op: Binary,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let op = match op {
            Binary::Add => "add",
            Binary::Sub => "sub",
            Binary::Mul => "mul",
        };
        let n = out.len();
        let params = vec![
            KernelParam::Buffer(a),
            KernelParam::Buffer(b),
            KernelParam::BufferMut(out),
        ];
        map::<T>(stream, op, n, params)
    }

    fn unary<T: Float>(
        stream: &Stream,
        op: Unary,
        x: &DeviceBuffer<T>,
        out: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let op = match op {
            Unary::Relu => "relu",
            Unary::Sigmoid => "sigmoid",
            Unary::Tanh => "tanh",
        };
        let n = out.len();
        let params = vec![KernelParam::Buffer(x), KernelParam::BufferMut(out)];
        map::<T>(stream, op, n, params)
    }

    fn axpy<T: Float>(
        stream: &Stream,
        alpha: T,
        x: &DeviceBuffer<T>,
        y: &mut DeviceBuffer<T>,
    ) -> Result<()> {
        let n = y.len();
        let params = vec![
            param(alpha.to_acc()),
            KernelParam::Buffer(x),
            KernelParam::BufferMut(y),
        ];
        map::<T>(stream, "axpy", n, params)
    }

    fn scale<T: Float>(stream: &Stream, alpha: T, x: &mut DeviceBuffer<T>) -> Result<()> {
        let n = x.len();
        let params = vec![param(alpha.to_acc()), KernelParam::BufferMut(x)];
        map::<T>(stream, "scale", n, params)
    }

    fn reduce<T: Float>(
        stream: &Stream,
        op: Reduce,
        x: &DeviceBuffer<T>,
        y: Option<&DeviceBuffer<T>>,
    ) -> Result<T> {
        let n = x.len();
        if n == 0 {
            return Ok(T::from_acc(num_traits::Zero::zero()));
        }
        let blocks = n.div_ceil(Grid::DEFAULT_BLOCK as usize).min(REDUCE_BLOCKS);
        let mut partial = DeviceBuffer::<T::Acc>::alloc(&stream.handle, blocks)?;
        let mut out = DeviceBuffer::<T::Acc>::alloc(&stream.handle, 1)?;
        let (first, last) = match op {
            Reduce::Sum => ("sum", "sum_final"),
            Reduce::Dot => ("dot", "sum_final"),
            Reduce::Max => ("max", "max_final"),
        };
        let mut params = vec![KernelParam::Buffer(x)];
        if let Some(y) = y {
            params.push(KernelParam::Buffer(y));
        }
        params.extend([KernelParam::BufferMut(&mut partial), param(n as u64)]);
        launch(stream, &map_name::<T>(first), n, REDUCE_BLOCKS, &mut params)?;
        let last = format!("ug_{last}_{}", T::ACC_SUFFIX);
        let mut params = [
            KernelParam::Buffer(&partial),
            KernelParam::BufferMut(&mut out),
            param(blocks as u64),
        ];
        launch(stream, &last, blocks, 1, &mut params)?;
        let mut value = [T::Acc::default()];
        out.read_into(&stream.handle, &mut value)?;
        Ok(T::from_acc(value[0]))
    }

    fn matmul<T: Float>(
        stream: &Stream,
        a: &DeviceBuffer<T>,
        b: &DeviceBuffer<T>,
        c: &mut DeviceBuffer<T>,
        shape: &GemmShape,
    ) -> Result<()> {
        let blas = stream.device.blas(&stream.handle)?;
        Ok(blas.gemm_row_major::<T>(&stream.handle, shape, a, b, c)?)
    }
}
