//! The CUDA side of the built-in ops: launches of the kernels in
//! `cuda_src`, and cuBLAS for matmul.

use crate::array::Storage;
use crate::kernel::{Arg, Grid, KernelArg, Scalar};
use crate::ops::{Binary, Float, Reduce, Unary};
use crate::stream::StreamImpl;
use crate::{Context, Element, Error, GpuArray, Result, Stream};

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
    ctx: &Context,
    stream: &Stream,
    name: &str,
    n: usize,
    max_blocks: usize,
    args: Vec<Arg<'_>>,
) -> Result<()> {
    let kernel = ctx.builtin_kernel(name)?;
    stream.launch(&kernel, grid(n, max_blocks), args)
}

pub(crate) fn fill<T: Element>(
    ctx: &Context,
    stream: &Stream,
    x: &mut GpuArray<T>,
    value: T,
) -> Result<()> {
    let n = x.len();
    if n == 0 {
        return Ok(());
    }
    let bytes = bytemuck::bytes_of(&value);
    let (name, v) = match bytes.len() {
        1 => ("ug_fill_b1", Scalar::new(bytes[0])),
        2 => (
            "ug_fill_b2",
            Scalar::new(half::f16::from_bits(u16::from_le_bytes([
                bytes[0], bytes[1],
            ]))),
        ),
        4 => (
            "ug_fill_b4",
            Scalar::new(u32::from_le_bytes(bytes.try_into().unwrap_or_default())),
        ),
        _ => (
            "ug_fill_b8",
            Scalar::new(u64::from_le_bytes(bytes.try_into().unwrap_or_default())),
        ),
    };
    launch(
        ctx,
        stream,
        name,
        n,
        MAX_BLOCKS,
        vec![x.into_arg(), Arg::Scalar(v), (n as u64).into_arg()],
    )
}

/// Launches the element-wise kernel `ug_{op}_{T}` over `n` elements, with
/// `args` followed by `n`.
fn map<T: Float>(
    ctx: &Context,
    stream: &Stream,
    op: &str,
    n: usize,
    mut args: Vec<Arg<'_>>,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    args.push((n as u64).into_arg());
    let name = format!("ug_{op}_{}", T::SUFFIX);
    launch(ctx, stream, &name, vectors::<T>(n), MAX_BLOCKS, args)
}

pub(crate) fn binary<T: Float>(
    ctx: &Context,
    stream: &Stream,
    op: Binary,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let op = match op {
        Binary::Add => "add",
        Binary::Sub => "sub",
        Binary::Mul => "mul",
    };
    let n = out.len();
    map::<T>(
        ctx,
        stream,
        op,
        n,
        vec![a.into_arg(), b.into_arg(), out.into_arg()],
    )
}

pub(crate) fn unary<T: Float>(
    ctx: &Context,
    stream: &Stream,
    op: Unary,
    x: &GpuArray<T>,
    out: &mut GpuArray<T>,
) -> Result<()> {
    let op = match op {
        Unary::Relu => "relu",
        Unary::Sigmoid => "sigmoid",
        Unary::Tanh => "tanh",
    };
    let n = out.len();
    map::<T>(ctx, stream, op, n, vec![x.into_arg(), out.into_arg()])
}

pub(crate) fn axpy<T: Float>(
    ctx: &Context,
    stream: &Stream,
    alpha: T,
    x: &GpuArray<T>,
    y: &mut GpuArray<T>,
) -> Result<()> {
    let alpha = Arg::Scalar(Scalar::new(alpha.to_acc()));
    let n = y.len();
    map::<T>(
        ctx,
        stream,
        "axpy",
        n,
        vec![alpha, x.into_arg(), y.into_arg()],
    )
}

pub(crate) fn scale<T: Float>(
    ctx: &Context,
    stream: &Stream,
    alpha: T,
    x: &mut GpuArray<T>,
) -> Result<()> {
    let alpha = Arg::Scalar(Scalar::new(alpha.to_acc()));
    let n = x.len();
    map::<T>(ctx, stream, "scale", n, vec![alpha, x.into_arg()])
}

pub(crate) fn reduce<T: Float>(
    ctx: &Context,
    stream: &Stream,
    op: Reduce,
    x: &GpuArray<T>,
    y: Option<&GpuArray<T>>,
) -> Result<T> {
    let n = x.len();
    if n == 0 {
        return Ok(T::from_acc(num_traits::Zero::zero()));
    }
    let blocks = n.div_ceil(Grid::DEFAULT_BLOCK as usize).min(REDUCE_BLOCKS);
    let mut partial = ctx.alloc::<T::Acc>(blocks)?;
    let mut out = ctx.alloc::<T::Acc>(1)?;
    let (first, last) = match op {
        Reduce::Sum => ("sum", "sum_final"),
        Reduce::Dot => ("dot", "sum_final"),
        Reduce::Max => ("max", "max_final"),
    };
    let mut args = vec![x.into_arg()];
    if let Some(y) = y {
        args.push(y.into_arg());
    }
    args.extend([partial.as_arg_mut(), (n as u64).into_arg()]);
    launch(
        ctx,
        stream,
        &format!("ug_{first}_{}", T::SUFFIX),
        n,
        REDUCE_BLOCKS,
        args,
    )?;
    let final_args = vec![
        partial.into_arg(),
        out.as_arg_mut(),
        (blocks as u64).into_arg(),
    ];
    launch(
        ctx,
        stream,
        &format!("ug_{last}_{}", T::ACC_SUFFIX),
        blocks,
        1,
        final_args,
    )?;
    let value = stream.download(&out)?;
    drop(partial);
    Ok(T::from_acc(value[0]))
}

pub(crate) fn matmul<T: Float>(
    ctx: &Context,
    stream: &Stream,
    a: &GpuArray<T>,
    b: &GpuArray<T>,
    c: &mut GpuArray<T>,
    (m, k, n): (usize, usize, usize),
) -> Result<()> {
    let (StreamImpl::Cuda(s), Storage::Cuda(a), Storage::Cuda(b), Storage::Cuda(c)) =
        (&stream.imp, &a.storage, &b.storage, &mut c.storage)
    else {
        return Err(Error::ContextMismatch { what: "matmul" });
    };
    let blas = ctx.blas()?;
    Ok(blas.gemm_row_major::<T>(s, m, n, k, a, b, c)?)
}

/// `&mut GpuArray` as a launch argument, without giving up the binding.
trait IntoArgMut {
    fn as_arg_mut(&mut self) -> Arg<'_>;
}

impl<T: Element> IntoArgMut for GpuArray<T> {
    fn as_arg_mut(&mut self) -> Arg<'_> {
        Arg::ArrayMut(self)
    }
}
