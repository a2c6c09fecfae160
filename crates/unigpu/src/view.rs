//! Views: an array's elements seen with another layout (reshaped,
//! transposed, permuted, sliced, indexed, broadcast), sharing its memory.
//!
//! A view borrows its array as Rust borrows a slice: [`ArrayView`] from
//! `&GpuArray` (any number of them, read only), [`ArrayViewMut`] from
//! `&mut GpuArray` (one, read and write). So a view never outlives its
//! memory, and a write through a view cannot race a read of the array on
//! the host side of the program. On the device side a view's work goes to
//! the array's own buffer, through the same use tracking: a write through
//! a view, then a read of the array on another stream, sees the write.

use std::ops::Range;

use unigpu_core::{IntoShape, Layout};

use crate::array::shape_error;
use crate::stream::check_len;
use crate::{Context, Element, Error, GpuArray, Result};

/// The elements of a `GpuArray` seen with another layout, read only.
/// Made by [`GpuArray::view`] (and [`GpuArray::t`]); cheap to clone.
#[derive(Clone)]
pub struct ArrayView<'a, T: Element> {
    pub(crate) array: &'a GpuArray<T>,
    pub(crate) layout: Layout,
}

/// As [`ArrayView`], writable: made by [`GpuArray::view_mut`].
pub struct ArrayViewMut<'a, T: Element> {
    pub(crate) array: &'a mut GpuArray<T>,
    pub(crate) layout: Layout,
}

impl<T: Element> GpuArray<T> {
    /// All the elements as a view, to reshape, transpose or slice.
    pub fn view(&self) -> ArrayView<'_, T> {
        ArrayView {
            layout: self.layout.clone(),
            array: self,
        }
    }

    /// All the elements as a writable view.
    pub fn view_mut(&mut self) -> ArrayViewMut<'_, T> {
        ArrayViewMut {
            layout: self.layout.clone(),
            array: self,
        }
    }

    /// The elements `layout` names in this array's memory (numpy's
    /// `as_strided`, checked): refused when an element lies outside it.
    /// What the bindings keep for a view.
    pub fn view_as(&self, layout: Layout) -> Result<ArrayView<'_, T>> {
        layout
            .check_within(self.storage.len())
            .map_err(|e| shape_error("GpuArray::view_as", e))?;
        Ok(ArrayView {
            layout,
            array: self,
        })
    }

    /// As [`GpuArray::view_as`], writable (a layout that may hold an
    /// element twice is refused when written).
    pub fn view_mut_as(&mut self, layout: Layout) -> Result<ArrayViewMut<'_, T>> {
        layout
            .check_within(self.storage.len())
            .map_err(|e| shape_error("GpuArray::view_mut_as", e))?;
        Ok(ArrayViewMut {
            layout,
            array: self,
        })
    }

    /// Every axis reversed (numpy's `.T`; a matrix transposed), as a view:
    /// no element moves.
    pub fn t(&self) -> ArrayView<'_, T> {
        self.view().t()
    }
}

/// The shape operations both view kinds have; each returns a view of the
/// same memory and never copies.
macro_rules! shape_ops {
    ($view:ident) => {
        impl<'a, T: Element> $view<'a, T> {
            pub fn shape(&self) -> &[usize] {
                self.layout.shape()
            }

            pub fn ndim(&self) -> usize {
                self.layout.ndim()
            }

            /// In elements, one per axis; 0 along a broadcast axis.
            pub fn strides(&self) -> &[isize] {
                self.layout.strides()
            }

            /// Shape, strides and the first element's offset in the
            /// array's memory.
            pub fn layout(&self) -> &Layout {
                &self.layout
            }

            /// Number of elements (the product of the shape).
            pub fn len(&self) -> usize {
                self.layout.len()
            }

            pub fn is_empty(&self) -> bool {
                self.layout.is_empty()
            }

            /// Whether the elements are one row-major run of the memory.
            pub fn is_contiguous(&self) -> bool {
                self.layout.is_contiguous()
            }

            pub fn context(&self) -> &Context {
                &self.array.ctx
            }

            /// The same elements with shape `shape`; refused, naming both
            /// shapes, where the strides cannot express it without a copy.
            pub fn reshape(self, shape: impl IntoShape) -> Result<Self> {
                let layout = self
                    .layout
                    .reshape(&shape.into_shape())
                    .map_err(|e| shape_error(concat!(stringify!($view), "::reshape"), e))?;
                Ok(Self { layout, ..self })
            }

            /// Every axis reversed (numpy's `.T`).
            pub fn t(self) -> Self {
                Self {
                    layout: self.layout.transpose(),
                    ..self
                }
            }

            /// Axis `i` of the result is axis `axes[i]` of this view.
            pub fn permute(self, axes: &[usize]) -> Result<Self> {
                let layout = self
                    .layout
                    .permute(axes)
                    .map_err(|e| shape_error(concat!(stringify!($view), "::permute"), e))?;
                Ok(Self { layout, ..self })
            }

            /// Axes `a` and `b` swapped.
            pub fn swap_axes(self, a: usize, b: usize) -> Result<Self> {
                let layout = self
                    .layout
                    .swap_axes(a, b)
                    .map_err(|e| shape_error(concat!(stringify!($view), "::swap_axes"), e))?;
                Ok(Self { layout, ..self })
            }

            /// Elements `range` of `axis`; the axis is kept.
            pub fn slice(self, axis: usize, range: Range<usize>) -> Result<Self> {
                self.slice_step(axis, range, 1)
            }

            /// Every `|step|`-th element of `range` along `axis`: upwards
            /// from `range.start` for a positive step, downwards from
            /// `range.end - 1` for a negative one (ndarray's rule;
            /// `slice_step(0, 0..n, -1)` reverses the axis).
            pub fn slice_step(self, axis: usize, range: Range<usize>, step: isize) -> Result<Self> {
                let layout = self
                    .layout
                    .slice(axis, range, step)
                    .map_err(|e| shape_error(concat!(stringify!($view), "::slice"), e))?;
                Ok(Self { layout, ..self })
            }

            /// Element `index` of `axis`, the axis removed (`a[i]`).
            pub fn index(self, axis: usize, index: usize) -> Result<Self> {
                let layout = self
                    .layout
                    .index(axis, index)
                    .map_err(|e| shape_error(concat!(stringify!($view), "::index"), e))?;
                Ok(Self { layout, ..self })
            }

            /// A new contiguous array holding the elements (row-major order
            /// of the shape), copied on the device after the pending writes
            /// to the memory.
            pub fn to_contiguous(&self) -> Result<GpuArray<T>> {
                let ctx = &self.array.ctx;
                let mut out = GpuArray::uninit_shaped(ctx, self.layout.shape())?;
                let shape = out.layout.clone();
                crate::strided::copy(
                    ctx,
                    ctx.default_stream(),
                    &self.array.storage,
                    &self.layout,
                    &mut out.storage,
                    &shape,
                )?;
                Ok(out)
            }

            /// The elements in row-major order of the shape, after every
            /// pending write to the memory. Blocks.
            pub fn download(&self) -> Result<Vec<T>> {
                if self.layout.is_whole(self.array.storage.len()) {
                    return self.array.download();
                }
                self.to_contiguous()?.download()
            }
        }

        impl<T: Element> std::fmt::Debug for $view<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($view))
                    .field("backend", &self.array.ctx.backend())
                    .field("dtype", &T::DTYPE)
                    .field("shape", &self.layout.shape())
                    .field("strides", &self.layout.strides())
                    .field("offset", &self.layout.offset())
                    .finish()
            }
        }
    };
}

shape_ops!(ArrayView);
shape_ops!(ArrayViewMut);

impl<'a, T: Element> ArrayView<'a, T> {
    /// The view repeated to `shape` by numpy's broadcasting rules (new
    /// leading axes, extent-1 axes repeated with stride 0). Read only:
    /// broadcast elements share their memory.
    pub fn broadcast_to(self, shape: impl IntoShape) -> Result<Self> {
        let layout = self
            .layout
            .broadcast_to(&shape.into_shape())
            .map_err(|e| shape_error("ArrayView::broadcast_to", e))?;
        Ok(Self { layout, ..self })
    }
}

impl<'a, T: Element> ArrayViewMut<'a, T> {
    /// A read-only view of the same elements, for as long as it lives.
    pub fn as_view(&self) -> ArrayView<'_, T> {
        ArrayView {
            array: self.array,
            layout: self.layout.clone(),
        }
    }

    /// Copies `src` into these elements, on the context's default stream
    /// after the pending uses of both: the shapes must be equal, or `src`
    /// must broadcast to this view's shape (numpy's `a[...] = b`).
    pub fn assign(&mut self, src: &ArrayView<'_, T>) -> Result<()> {
        if !self.array.ctx.same_device(&src.array.ctx) {
            return Err(Error::ContextMismatch {
                what: "ArrayViewMut::assign",
            });
        }
        let from = src
            .layout
            .broadcast_to(self.layout.shape())
            .map_err(|e| shape_error("ArrayViewMut::assign", e))?;
        self.check_writable("ArrayViewMut::assign")?;
        let ctx = self.array.ctx.clone();
        crate::strided::copy(
            &ctx,
            ctx.default_stream(),
            &src.array.storage,
            &from,
            &mut self.array.storage,
            &self.layout,
        )
    }

    /// Overwrites these elements with `host` (row-major order of the
    /// shape, the same length).
    pub fn upload_from(&mut self, host: &[T]) -> Result<()> {
        check_len("ArrayViewMut::upload_from", self.len(), host.len())?;
        self.check_writable("ArrayViewMut::upload_from")?;
        let ctx = self.array.ctx.clone();
        let staged = crate::strided::stage(&ctx, ctx.default_stream(), host)?;
        crate::strided::copy(
            &ctx,
            ctx.default_stream(),
            &staged.storage,
            &Layout::contiguous(self.layout.shape()),
            &mut self.array.storage,
            &self.layout,
        )
    }

    /// A strided DLPack import may hold an element twice (a stride of 0,
    /// or strides that overlap); writing it twice would race.
    fn check_writable(&self, what: &'static str) -> Result<()> {
        if self.layout.may_overlap() {
            return Err(Error::Shape {
                what,
                message: format!(
                    "{:?} may hold an element twice (a stride of 0, or strides that overlap): it can be read, not written",
                    self.layout
                ),
            });
        }
        Ok(())
    }
}
