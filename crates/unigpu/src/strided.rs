//! Copies between two layouts of equal shape, on the device: the one
//! kernel every view needs (a strided view made contiguous, a result
//! written back through a view, a broadcast operand expanded). Written
//! once with `#[unigpu::kernel]`, so it runs on every backend that runs
//! generated kernels (u8 included: loaded as u32 and stored as its low 8
//! bits, exact); f16/bf16 views are copied through the host instead, bit
//! for bit (the kernel language moves them through f32).

use unigpu_core::Layout;

use crate::backend::Storage;
use crate::kernel::args::{WholeBuffer, WholeBufferMut};
use crate::kernel::{Arg, Grid, Kernel, Scalar};
use crate::stream::Stream;
use crate::{Context, DType, Element, GpuArray, Result};

/// `dst[dst layout's element i] = src[src layout's element i]` for every
/// `i < n` in row-major order. `meta` holds the two first-element offsets,
/// then per axis (outermost first) its extent and the two strides, as u32:
/// a negative stride is its two's complement, which the kernel language's
/// wrapping 32-bit `usize` arithmetic turns back into a step down.
#[crate::kernel(T = [f32, f64, i32, u32, i64, u64, f16, bf16, u8], workgroup_size = 256)]
fn strided_copy<T>(src: &[T], dst: &mut [T], meta: &[u32], ndim: u32, n: u32) {
    let i = global_id().x;
    if i < n as usize {
        let mut rest = i;
        let mut s = meta[0] as usize;
        let mut d = meta[1] as usize;
        let mut axis = ndim as usize;
        while axis > 0 {
            axis -= 1;
            let at = 2 + axis * 3;
            let extent = meta[at] as usize;
            let k = rest % extent;
            rest /= extent;
            s += k * meta[at + 1] as usize;
            d += k * meta[at + 2] as usize;
        }
        dst[d] = src[s];
    }
}

/// The shape and the two layouts' strides with extent-1 axes dropped and
/// neighbouring axes merged wherever both layouts step through them as
/// one: a contiguous-to-contiguous copy becomes one axis.
fn merged_axes(shape: &[usize], a: &[isize], b: &[isize]) -> Vec<(usize, isize, isize)> {
    let mut out: Vec<(usize, isize, isize)> = Vec::new();
    for ((&d, &sa), &sb) in shape.iter().zip(a).zip(b) {
        if d == 1 {
            continue;
        }
        if let Some(last) = out.last_mut()
            && last.1 == sa * d as isize
            && last.2 == sb * d as isize
        {
            *last = (last.0 * d, sa, sb);
            continue;
        }
        out.push((d, sa, sb));
    }
    out
}

/// The generated copy kernel's instance for `T`, or `None` for f16/bf16.
fn copy_kernel<T: Element>(ctx: &Context) -> Result<Option<Kernel>> {
    Ok(Some(match T::DTYPE {
        DType::F32 => (*strided_copy::kernel::<f32>(ctx)?).clone(),
        DType::F64 => (*strided_copy::kernel::<f64>(ctx)?).clone(),
        // The kernel language moves f16/bf16 through f32, which may change
        // a NaN's bits (a signalling NaN comes back quiet); a copy keeps
        // every bit, so 16-bit views copy through the host until the
        // language has a 16-bit integer type.
        DType::F16 | DType::BF16 => return Ok(None),
        DType::I32 => (*strided_copy::kernel::<i32>(ctx)?).clone(),
        DType::U32 => (*strided_copy::kernel::<u32>(ctx)?).clone(),
        DType::I64 => (*strided_copy::kernel::<i64>(ctx)?).clone(),
        DType::U64 => (*strided_copy::kernel::<u64>(ctx)?).clone(),
        DType::U8 => (*strided_copy::kernel::<u8>(ctx)?).clone(),
    }))
}

/// Copies the elements `src_layout` describes in `src` to the places
/// `dst_layout` describes in `dst`, in row-major order of their (equal)
/// shapes, ordered on `stream` like any kernel. Both layouts are already
/// checked to lie within their buffers.
pub(crate) fn copy<T: Element>(
    ctx: &Context,
    stream: &Stream,
    src: &Storage<T>,
    src_layout: &Layout,
    dst: &mut Storage<T>,
    dst_layout: &Layout,
) -> Result<()> {
    debug_assert_eq!(src_layout.shape(), dst_layout.shape());
    let n = src_layout.len();
    if n == 0 {
        return Ok(());
    }
    // All of one buffer into all of another: the backend's own copy,
    // which keeps every bit (the kernel moves f16/bf16 through f32, which
    // may change a NaN's payload).
    if src_layout.is_whole(src.len()) && dst_layout.is_whole(dst.len()) {
        return stream.imp.copy(src, dst);
    }
    let axes = merged_axes(
        src_layout.shape(),
        src_layout.strides(),
        dst_layout.strides(),
    );
    let too_big = |what: &str| crate::Error::Shape {
        what: "a strided copy",
        message: format!(
            "{what} does not fit the 32-bit indices of generated kernels ({src_layout:?} to {dst_layout:?})"
        ),
    };
    let mut meta = Vec::with_capacity(2 + 3 * axes.len());
    for offset in [src_layout.offset(), dst_layout.offset()] {
        meta.push(u32::try_from(offset).map_err(|_| too_big("an offset"))?);
    }
    for &(extent, a, b) in &axes {
        meta.push(u32::try_from(extent).map_err(|_| too_big("an extent"))?);
        for s in [a, b] {
            let s = i32::try_from(s).map_err(|_| too_big("a stride"))?;
            meta.push(s as u32);
        }
    }
    let n32 = u32::try_from(n).map_err(|_| too_big("the element count"))?;
    let Some(kernel) = copy_kernel::<T>(ctx)? else {
        return copy_through_host(stream, src, src_layout, dst, dst_layout);
    };
    let meta = stage(ctx, stream, &meta)?;
    let ndim = axes.len() as u32;
    let (src, mut dst) = (WholeBuffer(src), WholeBufferMut(dst));
    let args = vec![
        Arg::Array(&src),
        Arg::ArrayMut(&mut dst),
        Arg::Array(&meta),
        Arg::Scalar(Scalar::new(ndim)),
        Arg::Scalar(Scalar::new(n32)),
    ];
    stream.launch(&kernel, Grid::for_elems_with_block(n, 256), args)
}

/// A new array holding `host`, uploaded on `stream` without waiting for
/// the work already on it (`Context::upload` waits): what a view's upload
/// and the copy kernel's table go through, so that a gated stream never
/// blocks the host.
pub(crate) fn stage<T: Element>(ctx: &Context, stream: &Stream, host: &[T]) -> Result<GpuArray<T>> {
    let mut staged = GpuArray::uninit(ctx, host.len())?;
    stream.imp.upload(host, &mut staged.storage)?;
    Ok(staged)
}

/// The same copy through host memory, for element types the kernel
/// language cannot move bit for bit (f16/bf16): both buffers read, the elements moved, `dst` written.
fn copy_through_host<T: Element>(
    stream: &Stream,
    src: &Storage<T>,
    src_layout: &Layout,
    dst: &mut Storage<T>,
    dst_layout: &Layout,
) -> Result<()> {
    let from = src.read_vec(&stream.imp)?;
    let mut to = dst.read_vec(&stream.imp)?;
    for (s, d) in src_layout.offsets().zip(dst_layout.offsets()) {
        to[d] = from[s];
    }
    dst.write(&stream.imp, &to)
}

#[cfg(test)]
mod tests {
    use super::merged_axes;

    #[test]
    fn contiguous_axes_merge_and_transposed_ones_do_not() {
        assert_eq!(
            merged_axes(&[2, 3, 4], &[12, 4, 1], &[12, 4, 1]),
            vec![(24, 1, 1)]
        );
        assert_eq!(
            merged_axes(&[2, 3], &[1, 2], &[3, 1]),
            vec![(2, 1, 3), (3, 2, 1)]
        );
        assert_eq!(
            merged_axes(&[1, 5, 1], &[9, 1, 7], &[5, 1, 1]),
            vec![(5, 1, 1)]
        );
    }
}
