//! What ops take: arrays or views of them. The backends' ops work on whole
//! buffers, so an operand that is not all of its buffer in row-major
//! order (a transposed, sliced or broadcast view, a strided import) is
//! first copied to a contiguous buffer on the op's stream, and a result
//! written through such a view is computed into one and copied into
//! place: one extra pass over that operand (docs/guide.md, "Arrays with
//! shapes"). Whole operands go straight to the backend.
//! Matmul's operands are the exception (`On::gemm_operand`): a
//! transposed, sliced or batch-broadcast view goes to the backend as it
//! lies, described by a `GemmShape`.

use unigpu_core::{GemmOperand, Layout};

use crate::backend::Storage;
use crate::{ArrayView, ArrayViewMut, Context, Element, Error, GpuArray, Result, Stream};

/// Anything an op reads, taken by reference: a `GpuArray`, an
/// `ArrayView` or an `ArrayViewMut` (`ops.add(&a, &b.t(), &mut out)`).
pub trait AsView<T: Element> {
    fn as_view(&self) -> ArrayView<'_, T>;
}

/// Anything an op writes, taken by `&mut`: a `GpuArray` or an
/// `ArrayViewMut`. A `&mut` parameter, so a caller's `&mut` array is
/// reborrowed, not moved, and can be passed again.
pub trait AsViewMut<T: Element> {
    fn as_view_mut(&mut self) -> ArrayViewMut<'_, T>;
}

impl<T: Element> AsView<T> for GpuArray<T> {
    fn as_view(&self) -> ArrayView<'_, T> {
        self.view()
    }
}

impl<T: Element> AsView<T> for ArrayView<'_, T> {
    fn as_view(&self) -> ArrayView<'_, T> {
        self.clone()
    }
}

impl<T: Element> AsView<T> for ArrayViewMut<'_, T> {
    fn as_view(&self) -> ArrayView<'_, T> {
        ArrayViewMut::as_view(self)
    }
}

impl<T: Element> AsViewMut<T> for GpuArray<T> {
    fn as_view_mut(&mut self) -> ArrayViewMut<'_, T> {
        self.view_mut()
    }
}

impl<T: Element> AsViewMut<T> for ArrayViewMut<'_, T> {
    fn as_view_mut(&mut self) -> ArrayViewMut<'_, T> {
        ArrayViewMut {
            layout: self.layout.clone(),
            array: &mut *self.array,
        }
    }
}

/// An operand as the whole buffer the backend takes: the array's own
/// where the view is all of it in order, else a contiguous copy.
pub(super) enum Whole<'a, T: Element> {
    Borrowed(&'a Storage<T>),
    Copied(GpuArray<T>),
}

impl<T: Element> Whole<'_, T> {
    pub(super) fn storage(&self) -> &Storage<T> {
        match self {
            Whole::Borrowed(s) => s,
            Whole::Copied(a) => &a.storage,
        }
    }
}

/// Where an op runs: its context and stream.
#[derive(Clone, Copy)]
pub(super) struct On<'o> {
    pub(super) ctx: &'o Context,
    pub(super) stream: &'o Stream,
}

impl On<'_> {
    fn same_backend(&self, other: &Context, what: &'static str) -> Result<()> {
        if self.ctx.same_device(other) {
            Ok(())
        } else {
            Err(Error::ContextMismatch { what })
        }
    }

    /// `view` seen with `shape` (broadcast when it differs) as a whole
    /// buffer of `shape`'s elements in row-major order.
    pub(super) fn whole<'a, T: Element>(
        &self,
        view: &ArrayView<'a, T>,
        shape: &[usize],
        what: &'static str,
    ) -> Result<Whole<'a, T>> {
        self.same_backend(&view.array.ctx, what)?;
        let layout = view
            .layout
            .broadcast_to(shape)
            .map_err(|e| crate::array::shape_error(what, e))?;
        if layout.is_whole(view.array.storage.len()) {
            return Ok(Whole::Borrowed(&view.array.storage));
        }
        let mut copy = GpuArray::uninit_shaped(self.ctx, shape)?;
        let dense = copy.layout.clone();
        crate::strided::copy(
            self.ctx,
            self.stream,
            &view.array.storage,
            &layout,
            &mut copy.storage,
            &dense,
        )?;
        Ok(Whole::Copied(copy))
    }

    /// `view`, a matrix or a stack of them along its first axis (the
    /// last two axes are the matrices'), as a matmul operand: read in
    /// place where a backend can (each matrix row-major or transposed,
    /// with a leading dimension, at a batch stride of at least 0: a
    /// transposed view, a slice, a batch broadcast by a stride of 0), else
    /// copied to a contiguous buffer first (negative strides, a stride
    /// that is neither 1 nor at least a row, ...).
    pub(super) fn gemm_operand<'a, T: Element>(
        &self,
        view: &ArrayView<'a, T>,
        what: &'static str,
    ) -> Result<(Whole<'a, T>, GemmOperand)> {
        self.same_backend(&view.array.ctx, what)?;
        if let Some(op) = gemm_operand(&view.layout) {
            return Ok((Whole::Borrowed(&view.array.storage), op));
        }
        let shape = view.layout.shape().to_vec();
        let copy = self.whole(view, &shape, what)?;
        // Dense row-major matrices, one after another (one for a 2-D
        // operand or a batch of one, which every batch then reads).
        let (r, c) = (shape[shape.len() - 2], shape[shape.len() - 1]);
        let mut op = GemmOperand::row_major(r, c);
        if shape.len() < 3 || shape[0] <= 1 {
            op.batch_stride = 0;
        }
        Ok((copy, op))
    }

    /// `dst = src` for views: `src` broadcast to `dst`'s shape, or, for
    /// two contiguous views of one length, the elements in order.
    pub(super) fn copy<T: Element>(
        &self,
        src: &ArrayView<'_, T>,
        dst: &mut ArrayViewMut<'_, T>,
    ) -> Result<()> {
        let what = "copy";
        self.same_backend(&src.array.ctx, what)?;
        self.same_backend(&dst.array.ctx, what)?;
        let from = if src.is_contiguous() && dst.is_contiguous() && src.len() == dst.len() {
            src.layout.reshape(dst.shape())
        } else {
            src.layout.broadcast_to(dst.shape())
        }
        .map_err(|e| crate::array::shape_error(what, e))?;
        if dst.layout.may_overlap() {
            return Err(Error::Shape {
                what,
                message: format!(
                    "the destination {:?} may hold an element twice: it can be read, not written",
                    dst.layout
                ),
            });
        }
        crate::strided::copy(
            self.ctx,
            self.stream,
            &src.array.storage,
            &from,
            &mut dst.array.storage,
            &dst.layout,
        )
    }

    /// Runs `f` on the whole buffer of `out`'s elements: its own where the
    /// view is all of it in order, else a contiguous buffer copied into
    /// place after (and, where `f` reads it, `in_place`, filled from the
    /// view first).
    pub(super) fn write_whole<T: Element>(
        &self,
        out: &mut ArrayViewMut<'_, T>,
        in_place: bool,
        what: &'static str,
        f: impl FnOnce(&mut Storage<T>) -> Result<()>,
    ) -> Result<()> {
        self.same_backend(&out.array.ctx, what)?;
        if out.layout.is_whole(out.array.storage.len()) {
            return f(&mut out.array.storage);
        }
        if out.layout.may_overlap() {
            return Err(Error::Shape {
                what,
                message: format!(
                    "the output {:?} may hold an element twice (a stride of 0, or strides that overlap): it can be read, not written",
                    out.layout
                ),
            });
        }
        let mut tmp = GpuArray::uninit_shaped(self.ctx, out.layout.shape())?;
        let dense: Layout = tmp.layout.clone();
        if in_place {
            crate::strided::copy(
                self.ctx,
                self.stream,
                &out.array.storage,
                &out.layout,
                &mut tmp.storage,
                &dense,
            )?;
        }
        f(&mut tmp.storage)?;
        crate::strided::copy(
            self.ctx,
            self.stream,
            &tmp.storage,
            &dense,
            &mut out.array.storage,
            &out.layout,
        )
    }
}

/// How a 2-D or 3-D layout lies as a [`GemmOperand`], when it is one: each
/// matrix with a unit stride along its rows (row-major) or its columns
/// (transposed), the other stride at least a row (column), and a
/// non-negative batch stride. An axis of one element may have any stride.
pub(crate) fn gemm_operand(layout: &Layout) -> Option<GemmOperand> {
    let (shape, strides) = (layout.shape(), layout.strides());
    let nd = shape.len();
    if !(2..=3).contains(&nd) {
        return None;
    }
    let (r, c) = (shape[nd - 2], shape[nd - 1]);
    let (sr, sc) = (strides[nd - 2], strides[nd - 1]);
    if r == 0 || c == 0 || shape[..nd - 2].contains(&0) {
        // Nothing is read (and an empty array's strides may be anything).
        return Some(GemmOperand {
            offset: layout.offset(),
            batch_stride: 0,
            ld: c.max(1),
            transposed: false,
        });
    }
    let batch_stride = match nd {
        3 if shape[0] > 1 => usize::try_from(strides[0]).ok()?,
        _ => 0,
    };
    // The leading dimension: the stride between lines of `line` elements,
    // when there is more than one line (`lines`).
    let ld = |stride: isize, line: usize, lines: usize| {
        if lines <= 1 {
            Some(line.max(1))
        } else {
            usize::try_from(stride).ok().filter(|&s| s >= line.max(1))
        }
    };
    let op = |ld, transposed| GemmOperand {
        offset: layout.offset(),
        batch_stride,
        ld,
        transposed,
    };
    if c <= 1 || sc == 1 {
        if let Some(ld) = ld(sr, c, r) {
            return Some(op(ld, false));
        }
    }
    if r <= 1 || sr == 1 {
        if let Some(ld) = ld(sc, r, c) {
            return Some(op(ld, true));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which layouts matmul reads in place (and how), and which it copies:
    /// the decision every backend's no-copy path rests on.
    #[test]
    fn gemm_operands_of_views() {
        let x = Layout::contiguous(&[5, 7]);
        let op = |l: &Layout| gemm_operand(l);
        let plain = op(&x).unwrap();
        assert_eq!((plain.ld, plain.transposed, plain.offset), (7, false, 0));
        // a.t(): column-major, the leading dimension the row length.
        let t = op(&x.transpose()).unwrap();
        assert_eq!(
            (t.ld, t.transposed, t.offset, t.batch_stride),
            (7, true, 0, 0)
        );
        // A column range: an offset and a leading dimension past the row.
        let cols = op(&x.slice(1, 2..5, 1).unwrap()).unwrap();
        assert_eq!((cols.ld, cols.transposed, cols.offset), (7, false, 2));
        // Batches: a slice along the batch, its matrices transposed.
        let z = Layout::contiguous(&[4, 5, 7]);
        let zt = op(&z.slice(0, 1..3, 1).unwrap().swap_axes(1, 2).unwrap()).unwrap();
        assert_eq!(
            (zt.offset, zt.batch_stride, zt.ld, zt.transposed),
            (35, 35, 7, true)
        );
        // One matrix broadcast over a batch: a batch stride of 0.
        let b = op(&x.broadcast_to(&[3, 5, 7]).unwrap()).unwrap();
        assert_eq!((b.batch_stride, b.ld, b.transposed), (0, 7, false));
        // Copied: reversed rows, every other column.
        assert!(op(&x.slice(0, 0..5, -1).unwrap()).is_none());
        assert!(op(&x.slice(1, 0..7, 2).unwrap()).is_none());
        // Nothing read from an empty operand, whatever its strides.
        assert!(op(&Layout::contiguous(&[3, 0])).is_some());
    }
}
