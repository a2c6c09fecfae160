//! Arrays made with contents: `ones`, `full`, `arange`, `linspace`, `eye`
//! and the `*_like` family, filled on the device (a fill, or a generated
//! kernel followed by a cast), never from a host vector of the whole
//! size.

use unigpu_core::{IntoShape, Layout};

use crate::cast::cast_host;
use crate::element::with_dtype;
use crate::kernel::{Arg, Grid, Scalar};
use crate::{AnyArray, Context, DType, Element, Error, GpuArray, Result};

/// `out[i] = i * step + start` in f64 (one multiply, one add, each
/// rounded to nearest even; never fused on a backend that forbids
/// contraction, docs/kernels.md), element 1 `second` where `pin_second`,
/// the last element `last` where `pin_last`, floored where `floor`.
#[allow(clippy::too_many_arguments)]
#[crate::kernel(workgroup_size = 256)]
fn ramp_f64(
    out: &mut [f64],
    start: f64,
    step: f64,
    second: f64,
    last: f64,
    n: u32,
    pin_second: bool,
    pin_last: bool,
    floor: bool,
) {
    let i = global_id().x;
    if i < n as usize {
        let mut v = (i as f64) * step + start;
        if pin_second && i == 1 {
            v = second;
        }
        if pin_last && i + 1 == n as usize {
            v = last;
        }
        if floor {
            v = v.floor();
        }
        out[i] = v;
    }
}

fn bad(call: &str, message: String) -> Error {
    Error::KernelArgs {
        kernel: format!("Context::{call}"),
        message,
    }
}

impl Context {
    /// An array of `shape` with every element `value` (numpy's `full`).
    pub fn full<T: Element>(&self, shape: impl IntoShape, value: T) -> Result<GpuArray<T>> {
        let mut a = self.alloc::<T>(shape)?;
        self.ops().fill(&mut a, value)?;
        Ok(a)
    }

    /// An array of `shape` holding ones (numpy's `ones`).
    pub fn ones<T: Element>(&self, shape: impl IntoShape) -> Result<GpuArray<T>> {
        self.full(shape, one::<T>())
    }

    /// The `n`×`n` identity matrix (numpy's `eye(n)`).
    pub fn eye<T: Element>(&self, n: usize) -> Result<GpuArray<T>> {
        self.eye_rect(n, n)
    }

    /// A `rows`×`cols` matrix with ones on the main diagonal (`[i, i]`)
    /// and zeroes elsewhere (numpy's `eye(rows, cols)`).
    pub fn eye_rect<T: Element>(&self, rows: usize, cols: usize) -> Result<GpuArray<T>> {
        let mut a = self.zeros::<T>([rows, cols])?;
        let d = rows.min(cols);
        if d > 0 {
            // The diagonal as a strided view of the buffer, filled in
            // place (a zeroed allocation and one small fill).
            let stride = isize::try_from(cols + 1)
                .map_err(|_| bad("eye", format!("{cols} columns is too many")))?;
            let diag = Layout::from_parts(&[d], &[stride], 0)
                .map_err(|e| crate::array::shape_error("Context::eye", e))?;
            self.ops().fill(&mut a.view_mut_as(diag)?, one::<T>())?;
        }
        Ok(a)
    }

    /// Values from `start` up to (not including) `stop` by `step`, as
    /// numpy's `arange(start, stop, step)`: `ceil((stop - start) / step)`
    /// elements (none when that is not positive), computed in f64 as
    /// numpy computes a float64 arange: element 0 is `start`, element 1
    /// `start + step`, element `i >= 2` is `i * d + start` with
    /// `d = (start + step) - start`; then cast to `T` by the cast rule
    /// ([`GpuArray::astype`]: toward zero for integers). Refused, with an
    /// error: a step of 0, any argument NaN or infinite, more elements
    /// than 2^32 − 1. Integers above 2^53 are not exact (the arithmetic
    /// is f64's).
    pub fn arange<T: Element>(&self, start: f64, stop: f64, step: f64) -> Result<GpuArray<T>> {
        for (name, v) in [("start", start), ("stop", stop), ("step", step)] {
            if !v.is_finite() {
                return Err(bad("arange", format!("{name} must be finite, got {v}")));
            }
        }
        if step == 0.0 {
            return Err(bad("arange", "step must not be 0".into()));
        }
        let count = ((stop - start) / step).ceil();
        let n = if count > 0.0 { count } else { 0.0 };
        // Never NaN: the arguments are finite and the step is not 0.
        if n > u32::MAX as f64 {
            return Err(bad(
                "arange",
                format!(
                    "({start}, {stop}, {step}) makes {count} elements; at most {} are allowed",
                    u32::MAX
                ),
            ));
        }
        let second = start + step;
        let d = second - start;
        self.ramp("arange", n as usize, start, d, Some(second), None, false)
    }

    /// `num` values evenly spaced from `start` to `stop`, both included
    /// (numpy's `linspace(start, stop, num)`): with
    /// `step = (stop - start) / (num - 1)` in f64, element `i` is
    /// `i * step + start` (f64, each operation rounded once) and the last
    /// element is `stop` exactly; `num == 1` gives `[start]`. Then cast to
    /// `T` by the cast rule, except that integer types take the floor
    /// first (as numpy 2 does). Refused: a NaN or infinite `start`/`stop`,
    /// `num` above 2^32 − 1.
    pub fn linspace<T: Element>(&self, start: f64, stop: f64, num: usize) -> Result<GpuArray<T>> {
        for (name, v) in [("start", start), ("stop", stop)] {
            if !v.is_finite() {
                return Err(bad("linspace", format!("{name} must be finite, got {v}")));
            }
        }
        if u32::try_from(num).is_err() {
            return Err(bad(
                "linspace",
                format!("num = {num}; at most {} are allowed", u32::MAX),
            ));
        }
        let step = if num > 1 {
            (stop - start) / (num - 1) as f64
        } else {
            0.0
        };
        let last = if num > 1 { Some(stop) } else { None };
        self.ramp(
            "linspace",
            num,
            start,
            step,
            None,
            last,
            T::DTYPE.is_integer(),
        )
    }

    /// `n` values of `ramp_f64`, cast to `T`.
    #[allow(clippy::too_many_arguments)]
    fn ramp<T: Element>(
        &self,
        call: &str,
        n: usize,
        start: f64,
        step: f64,
        second: Option<f64>,
        last: Option<f64>,
        floor: bool,
    ) -> Result<GpuArray<T>> {
        let mut v = self.alloc::<f64>(n)?;
        if n > 0 {
            let n32 = u32::try_from(n).map_err(|_| bad(call, format!("{n} elements")))?;
            let kernel = ramp_f64::kernel(self)?;
            let args = vec![
                Arg::ArrayMut(&mut v),
                Arg::Scalar(Scalar::new(start)),
                Arg::Scalar(Scalar::new(step)),
                Arg::Scalar(Scalar::new(second.unwrap_or(0.0))),
                Arg::Scalar(Scalar::new(last.unwrap_or(0.0))),
                Arg::Scalar(Scalar::new(n32)),
                Arg::Scalar(Scalar::new(u32::from(second.is_some()))),
                Arg::Scalar(Scalar::new(u32::from(last.is_some()))),
                Arg::Scalar(Scalar::new(u32::from(floor))),
            ];
            self.default_stream()
                .launch(&kernel, Grid::for_elems_with_block(n, 256), args)?;
        }
        v.astype::<T>()
    }
}

impl<T: Element> GpuArray<T> {
    /// A new zeroed array of this one's shape and type, in its context
    /// (numpy's `zeros_like`).
    pub fn zeros_like(&self) -> Result<GpuArray<T>> {
        self.ctx.zeros::<T>(self.shape())
    }

    /// A new array of this one's shape and type, contents unspecified
    /// (numpy's `empty_like`; [`Context::alloc`]).
    pub fn empty_like(&self) -> Result<GpuArray<T>> {
        self.ctx.alloc::<T>(self.shape())
    }

    /// A new array of this one's shape and type holding ones (numpy's
    /// `ones_like`).
    pub fn ones_like(&self) -> Result<GpuArray<T>> {
        self.ctx.ones::<T>(self.shape())
    }

    /// A new array of this one's shape and type with every element
    /// `value` (numpy's `full_like`).
    pub fn full_like(&self, value: T) -> Result<GpuArray<T>> {
        self.ctx.full::<T>(self.shape(), value)
    }
}

/// The creators with the element type chosen at run time, for the
/// bindings (the C API's `ug_array_full` ..., Python's `Context.full` ...),
/// so both make the same arrays with the same errors.
impl AnyArray {
    /// [`Context::full`] of `value`'s dtype.
    pub fn full(ctx: &Context, shape: impl IntoShape, value: Scalar) -> Result<AnyArray> {
        with_dtype!(value.dtype(), T => {
            // Never None: `T` is the scalar's own dtype.
            let v = value.get::<T>().ok_or(Error::DTypeMismatch {
                what: "full",
                expected: T::DTYPE,
                actual: value.dtype(),
            })?;
            ctx.full::<T>(shape, v).map(AnyArray::from)
        })
    }

    /// [`Context::ones`] of `dtype`.
    pub fn ones(ctx: &Context, dtype: DType, shape: impl IntoShape) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.ones::<T>(shape).map(AnyArray::from))
    }

    /// [`Context::eye_rect`] of `dtype`.
    pub fn eye(ctx: &Context, dtype: DType, rows: usize, cols: usize) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.eye_rect::<T>(rows, cols).map(AnyArray::from))
    }

    /// [`Context::arange`] of `dtype`.
    pub fn arange(
        ctx: &Context,
        dtype: DType,
        start: f64,
        stop: f64,
        step: f64,
    ) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.arange::<T>(start, stop, step).map(AnyArray::from))
    }

    /// [`Context::linspace`] of `dtype`.
    pub fn linspace(
        ctx: &Context,
        dtype: DType,
        start: f64,
        stop: f64,
        num: usize,
    ) -> Result<AnyArray> {
        with_dtype!(dtype, T => ctx.linspace::<T>(start, stop, num).map(AnyArray::from))
    }
}

/// 1 as a `T`.
fn one<T: Element>() -> T {
    cast_host::<u32, T>(&[1])[0]
}

#[cfg(test)]
mod tests {
    #[test]
    fn one_is_one_in_every_type() {
        use crate::{bf16, f16};
        assert_eq!(super::one::<f16>(), f16::ONE);
        assert_eq!(super::one::<bf16>(), bf16::ONE);
        assert_eq!(super::one::<u8>(), 1u8);
        assert_eq!(super::one::<f64>(), 1.0);
    }
}
