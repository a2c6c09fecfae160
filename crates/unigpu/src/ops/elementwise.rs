//! The element-wise ops written once with `#[unigpu::kernel]` (issue 28,
//! item 5): unary math and rounding, clamp, binary div / minimum /
//! maximum / pow, comparisons giving a u8 mask, and `where_`. Each runs
//! on every backend that runs generated kernels, for f32, f64, f16 and
//! bf16 (f16/bf16 read as f32 and rounded once when written).
//!
//! One kernel per *group* of ops, instanced per op: the op is the
//! kernel's `const OP`, so each instance holds its op's code alone. On
//! the CPU that is what lets a loop vectorise: with the op a run-time
//! code, every iteration branched over all the group's ops, and one call
//! to libm's `sin` among them kept the whole loop scalar (floor ran at
//! 0.28× numpy's speed on 2 cores). On a GPU the branch on a uniform
//! code cost little, and the instance's constant costs nothing; an op's
//! instance is built on its first use in a context (NVRTC, whose disk
//! cache keeps it across processes, or a vulkan pipeline). The groups
//! are split by what a backend can build: `unary_math` and `binary_pow`
//! use transcendental functions, which WGSL has for f32 only, so on
//! vulkan their f64 instances are refused up front
//! (`Error::Unsupported`) while the exact ops (`unary_exact`,
//! `binary_op`, comparisons, `where_`) run in f64 wherever the adapter
//! has shader-f64.
//!
//! Scalars of the element type (clamp's bounds, pow's exponent) travel
//! in a 2-element array of `T`: the kernel language has no f16/bf16
//! values, only f16/bf16 array elements read as f32.
//!
//! Each kernel is one grid-stride loop over the elements (launched with
//! one invocation an element, so on a GPU each runs once): the CPU form
//! then takes its fast path (docs/kernels.md, "Speed": contiguous chunks
//! as plain slices, which LLVM vectorises) where an index per invocation
//! ran each element as its own work-item.
//!
//! Comparison masks are u8 arrays, written and read by the kernels
//! themselves (the kernel language loads a u8 element as u32 and stores
//! its low 8 bits), so comparisons and `where_` stay on the device and
//! are captured in graphs like the other ops.

use crate::kernel::args::{ArrayArg, WholeBuffer, WholeBufferMut};
use crate::kernel::{Arg, Grid, Kernel};
use crate::stream::check_len;
use crate::{ArrayView, Backend, Context, DType, Error, Result};

use super::{AsView, AsViewMut, Float, Ops};

/// Exact ops: neg, abs, floor, ceil, round (half to even), clamp.
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn unary_exact<T, const OP: usize>(x: &[T], p: &[T], out: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        let v = x[i];
        let mut r = v;
        if OP == 0 {
            r = -v;
        } else if OP == 1 {
            r = v.abs();
        } else if OP == 2 {
            r = v.floor();
        } else if OP == 3 {
            r = v.ceil();
        } else if OP == 4 {
            // Half to even, as numpy and torch: v - floor(v) is exact.
            let f = v.floor();
            let d = v - f;
            if d > 0.5 {
                r = f + 1.0;
            } else if d < 0.5 {
                r = f;
            } else if (f * 0.5).floor() == f * 0.5 {
                r = f;
            } else {
                r = f + 1.0;
            }
            if v == 0.0 {
                r = v;
            } else if r == 0.0 && v < 0.0 {
                // -0.3 and -0.5 round to -0, as numpy's: r is f + 1 = +0
                // here, and a sign flip is exact (a product with 0.0 is
                // folded to +0 by lavapipe's compiler).
                r = -r;
            }
        } else if OP == 5 {
            // torch's min(max(x, lo), hi): NaN x or a NaN bound gives NaN.
            let lo = p[0];
            let hi = p[1];
            if v < lo {
                r = lo;
            }
            if r > hi {
                r = hi;
            }
            if lo != lo || hi != hi {
                r = lo + hi;
            }
        }
        out[i] = r;
        i += stride;
    }
}

/// Ops through the math functions: exp, log, sqrt, rsqrt, sin, cos,
/// gelu (tanh form), silu, pow(x, p[0]).
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn unary_math<T, const OP: usize>(x: &[T], p: &[T], out: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        let v = x[i];
        let mut r = v;
        if OP == 0 {
            r = v.exp();
        } else if OP == 1 {
            r = v.ln();
        } else if OP == 2 {
            r = v.sqrt();
        } else if OP == 3 {
            if v > 0.0 {
                r = rsqrt(v);
            } else {
                // WGSL leaves inverseSqrt of 0 and negatives undefined:
                // ±0 give ±inf, negatives and NaN give NaN, everywhere.
                r = 1.0 / v.sqrt();
            }
        } else if OP == 4 {
            r = v.sin();
        } else if OP == 5 {
            r = v.cos();
        } else if OP == 6 {
            // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
            let u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
            r = 0.5 * v * (1.0 + u.tanh());
        } else if OP == 7 {
            r = v / (1.0 + (-v).exp());
        } else if OP == 8 {
            r = pow(v, p[0]);
        }
        out[i] = r;
        i += stride;
    }
}

/// div, minimum, maximum (NaN-propagating; -0 below +0).
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn binary_op<T, const OP: usize>(a: &[T], b: &[T], out: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        let x = a[i];
        let y = b[i];
        let mut r = x / y;
        if OP == 1 || OP == 2 {
            if x != x || y != y {
                r = x + y;
            } else if x == y {
                if x == 0.0 {
                    // Signed zeros: maximum(+0, -0) = +0, minimum = -0.
                    if OP == 2 {
                        r = x + y;
                    } else {
                        r = -((-x) + (-y));
                    }
                } else {
                    r = x;
                }
            } else if OP == 1 {
                if x < y {
                    r = x;
                } else {
                    r = y;
                }
            } else if x > y {
                r = x;
            } else {
                r = y;
            }
        }
        out[i] = r;
        i += stride;
    }
}

/// `a ** b`, C's pow.
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn binary_pow<T>(a: &[T], b: &[T], out: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        out[i] = pow(a[i], b[i]);
        i += stride;
    }
}

/// lt, le, gt, ge, eq, ne as 0/1 (IEEE: every comparison with a NaN is
/// false but `ne`).
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn compare<T, const OP: usize>(a: &[T], b: &[T], out: &mut [u8]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        let x = a[i];
        let y = b[i];
        let mut r = false;
        if OP == 0 {
            r = x < y;
        } else if OP == 1 {
            r = x <= y;
        } else if OP == 2 {
            r = x > y;
        } else if OP == 3 {
            r = x >= y;
        } else if OP == 4 {
            r = x == y;
        } else {
            r = x != y;
        }
        out[i] = r as u32;
        i += stride;
    }
}

/// `out = m != 0 ? a : b`. Both values are loaded before the mask is
/// looked at: a load under the mask's branch waited for the mask's own
/// load first, two memory round trips in a row (0.62x torch's `where`
/// on an H100).
#[crate::kernel(T = [f32, f64, f16, bf16], workgroup_size = 256)]
fn select<T>(m: &[u8], a: &[T], b: &[T], out: &mut [T]) {
    let stride = num_workgroups().x * workgroup_size().x;
    let mut i = global_id().x;
    while i < out.len() {
        let x = a[i];
        let y = b[i];
        if m[i] != 0 {
            out[i] = x;
        } else {
            out[i] = y;
        }
        i += stride;
    }
}

/// The groups of kernels above.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    Exact,
    Math,
    Binary,
    Pow,
    Compare,
    Select,
}

/// The instance of `group`'s kernel for `T` and op code `OP` (the
/// groups without ops, `Pow` and `Select`, take 0).
fn kernel_for<T: Float, const OP: usize>(
    ctx: &Context,
    group: Group,
    name: &str,
) -> Result<Kernel> {
    macro_rules! pick {
        ($k:ident $(, $op:ident)?) => {
            match T::DTYPE {
                DType::F32 => (*$k::kernel::<f32 $(, $op)?>(ctx)?).clone(),
                DType::F64 => (*$k::kernel::<f64 $(, $op)?>(ctx)?).clone(),
                DType::F16 => (*$k::kernel::<half::f16 $(, $op)?>(ctx)?).clone(),
                DType::BF16 => (*$k::kernel::<half::bf16 $(, $op)?>(ctx)?).clone(),
                other => {
                    return Err(Error::Unsupported {
                        backend: ctx.backend(),
                        what: format!("{name} of {other:?}"),
                    });
                }
            }
        };
    }
    if matches!(group, Group::Math | Group::Pow)
        && T::DTYPE == DType::F64
        && ctx.backend() == Backend::Vulkan
    {
        return Err(Error::Unsupported {
            backend: ctx.backend(),
            what: format!(
                "{name} of f64: WGSL's exp, log, sin, cos, tanh and pow take f32 only \
                 (compute in f32, or on another backend)"
            ),
        });
    }
    Ok(match group {
        Group::Exact => pick!(unary_exact, OP),
        Group::Math => pick!(unary_math, OP),
        Group::Binary => pick!(binary_op, OP),
        Group::Pow => pick!(binary_pow),
        Group::Compare => pick!(compare, OP),
        Group::Select => pick!(select),
    })
}

/// Elements a 16-byte access holds where the kernel macro widens a
/// kernel (f32, f64; a comparison's or `where_`'s u8 mask moves as many
/// bytes a vector, on the CUDA form); f16/bf16 kernels move one element
/// at a time.
fn widened_lanes<T: Float>() -> usize {
    match T::DTYPE {
        DType::F32 => 4,
        DType::F64 => 2,
        _ => 1,
    }
}

/// The op codes the kernels take.
const NEG: usize = 0;
const ABS: usize = 1;
const FLOOR: usize = 2;
const CEIL: usize = 3;
const ROUND: usize = 4;
const CLAMP: usize = 5;
const EXP: usize = 0;
const LOG: usize = 1;
const SQRT: usize = 2;
const RSQRT: usize = 3;
const SIN: usize = 4;
const COS: usize = 5;
const GELU: usize = 6;
const SILU: usize = 7;
const POW_SCALAR: usize = 8;
const DIV: usize = 0;
const MINIMUM: usize = 1;
const MAXIMUM: usize = 2;

/// The comparisons' op codes (`compare`'s `OP`).
const LT: usize = 0;
const LE: usize = 1;
const GT: usize = 2;
const GE: usize = 3;
const EQ: usize = 4;
const NE: usize = 5;

/// The broadcast shape of operands `shapes` that `out` must have.
fn broadcast_out(what: &'static str, shapes: &[&[usize]], out: &[usize]) -> Result<Vec<usize>> {
    let mut shape = shapes[0].to_vec();
    for s in &shapes[1..] {
        shape = unigpu_core::broadcast_shapes(&shape, s)
            .map_err(|e| crate::array::shape_error(what, e))?;
    }
    if shape != out {
        return Err(Error::Shape {
            what,
            message: format!(
                "the operands {shapes:?} broadcast to {shape:?}, the output is {out:?}"
            ),
        });
    }
    Ok(shape)
}

impl Ops<'_> {
    /// Launches `kernel` over `n` elements with `args`.
    ///
    /// `lanes`: elements an invocation moves at once. The unary and binary
    /// kernels of f32 and f64 are widened to 16-byte accesses (the kernel
    /// macro's widen.rs: 4 f32 or 2 f64 a load), so they launch one
    /// invocation a vector: with one an element, three in four
    /// invocations found nothing left and 3/4 of the workgroups only
    /// started and ended (all of these ops ran at about 1780 GB/s on an
    /// H100). Every kernel is a grid-stride loop, so any launch size
    /// covers every element.
    fn run_kernel(
        &self,
        kernel: &Kernel,
        n: usize,
        lanes: usize,
        args: Vec<Arg<'_>>,
    ) -> Result<()> {
        if n > u32::MAX as usize {
            return Err(Error::Shape {
                what: "element-wise op",
                message: format!("{n} elements do not fit the 32-bit indices of generated kernels"),
            });
        }
        let grid = Grid::for_elems_with_block(n.div_ceil(lanes.max(1)), 256);
        self.stream.launch(kernel, grid, args)
    }

    fn unary_kernel<T: Float, const OP: usize>(
        &self,
        group: Group,
        name: &'static str,
        params: Option<[T; 2]>,
        x: ArrayView<'_, T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let mut out = out.as_view_mut();
        if x.shape() != out.shape() {
            if x.ndim() == 1 && out.ndim() == 1 {
                return check_len(name, out.len(), x.len());
            }
            return Err(Error::Shape {
                what: name,
                message: format!("the input is {:?}, the output {:?}", x.shape(), out.shape()),
            });
        }
        let shape = x.shape().to_vec();
        let x = self.on().whole(&x, &shape, name)?;
        self.same_backend(&out.array.ctx, name)?;
        if out.is_empty() {
            return Ok(());
        }
        let kernel = kernel_for::<T, OP>(self.ctx, group, name)?;
        // Staged on the op's stream, not `Context::upload`, which waits for
        // the stream: that wait per op left the GPU idle between ops (0.6×
        // torch's bandwidth on an H100, 2026-11-28).
        // While the stream captures a graph, an upload on it cannot be
        // recorded: then the context's, before the capture's kernel.
        let staged = params
            .map(|params| match self.stream.is_capturing() {
                true => self.ctx.upload(&params),
                false => crate::strided::stage(self.ctx, self.stream, &params),
            })
            .transpose()?;
        let n = out.len();
        self.on().write_whole(&mut out, false, name, |out| {
            let (x, mut out) = (WholeBuffer(x.storage()), WholeBufferMut(out));
            // An op without scalars never reads `p`: `x` stands in for it.
            let p: &dyn ArrayArg = match &staged {
                Some(p) => p,
                None => &x,
            };
            let args = vec![Arg::Array(&x), Arg::Array(p), Arg::ArrayMut(&mut out)];
            self.run_kernel(&kernel, n, widened_lanes::<T>(), args)
        })
    }

    fn binary_kernel<T: Float, const OP: usize>(
        &self,
        group: Group,
        name: &'static str,
        a: ArrayView<'_, T>,
        b: ArrayView<'_, T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let mut out = out.as_view_mut();
        let shape = broadcast_out(name, &[a.shape(), b.shape()], out.shape())?;
        let a = self.on().whole(&a, &shape, name)?;
        let b = self.on().whole(&b, &shape, name)?;
        self.same_backend(&out.array.ctx, name)?;
        if out.is_empty() {
            return Ok(());
        }
        let kernel = kernel_for::<T, OP>(self.ctx, group, name)?;
        let n = out.len();
        self.on().write_whole(&mut out, false, name, |out| {
            let (a, b, mut out) = (
                WholeBuffer(a.storage()),
                WholeBuffer(b.storage()),
                WholeBufferMut(out),
            );
            let args = vec![Arg::Array(&a), Arg::Array(&b), Arg::ArrayMut(&mut out)];
            self.run_kernel(&kernel, n, widened_lanes::<T>(), args)
        })
    }

    /// `out = -x`.
    pub fn neg<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, NEG>(Group::Exact, "neg", None, x.as_view(), out)
    }

    /// `out = |x|` (`abs(-0) = +0`, `abs(NaN)` is NaN).
    pub fn abs<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, ABS>(Group::Exact, "abs", None, x.as_view(), out)
    }

    /// `out = floor(x)`, exact.
    pub fn floor<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, FLOOR>(Group::Exact, "floor", None, x.as_view(), out)
    }

    /// `out = ceil(x)`, exact.
    pub fn ceil<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, CEIL>(Group::Exact, "ceil", None, x.as_view(), out)
    }

    /// `out = round(x)`, halves to even as numpy's and torch's `round`
    /// (`round(2.5) = 2`, `round(-0.5) = -0`), exact.
    pub fn round<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, ROUND>(Group::Exact, "round", None, x.as_view(), out)
    }

    /// `out = min(max(x, lo), hi)` as torch's `clamp` (so `lo > hi` gives
    /// `hi`); a NaN `x` or a NaN bound gives NaN.
    pub fn clamp<T: Float>(
        &self,
        x: &impl AsView<T>,
        lo: T,
        hi: T,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.unary_kernel::<T, CLAMP>(Group::Exact, "clamp", Some([lo, hi]), x.as_view(), out)
    }

    /// `out = e^x`.
    pub fn exp<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, EXP>(Group::Math, "exp", None, x.as_view(), out)
    }

    /// `out = ln(x)` (NaN below 0, -inf at ±0).
    pub fn log<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, LOG>(Group::Math, "log", None, x.as_view(), out)
    }

    /// `out = sqrt(x)` (NaN below 0, `sqrt(-0) = -0`).
    pub fn sqrt<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, SQRT>(Group::Math, "sqrt", None, x.as_view(), out)
    }

    /// `out = 1 / sqrt(x)`.
    pub fn rsqrt<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, RSQRT>(Group::Math, "rsqrt", None, x.as_view(), out)
    }

    /// `out = sin(x)`.
    pub fn sin<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, SIN>(Group::Math, "sin", None, x.as_view(), out)
    }

    /// `out = cos(x)`.
    pub fn cos<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, COS>(Group::Math, "cos", None, x.as_view(), out)
    }

    /// `out = gelu(x)` in its tanh form, torch's
    /// `gelu(x, approximate="tanh")`:
    /// `0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³)))` (within 3·10⁻⁴ of
    /// the erf form; the erf form is not built yet).
    pub fn gelu<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, GELU>(Group::Math, "gelu", None, x.as_view(), out)
    }

    /// `out = x / (1 + e^-x)` (x · sigmoid(x); NaN at -inf, as torch's).
    pub fn silu<T: Float>(&self, x: &impl AsView<T>, out: &mut impl AsViewMut<T>) -> Result<()> {
        self.unary_kernel::<T, SILU>(Group::Math, "silu", None, x.as_view(), out)
    }

    /// `out = x ** p` for a scalar `p`, with C's special cases.
    pub fn pow_scalar<T: Float>(
        &self,
        x: &impl AsView<T>,
        p: T,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let params = [p, T::default()];
        self.unary_kernel::<T, POW_SCALAR>(Group::Math, "pow", Some(params), x.as_view(), out)
    }

    /// `out = a / b`, broadcasting as [`Ops::add`] (IEEE: `x / 0` is ±inf,
    /// `0 / 0` NaN).
    pub fn div<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary_kernel::<T, DIV>(Group::Binary, "div", a.as_view(), b.as_view(), out)
    }

    /// numpy's `minimum`: the smaller element; NaN if either is NaN (as
    /// numpy and torch); `minimum(-0, +0) = -0`.
    pub fn minimum<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary_kernel::<T, MINIMUM>(Group::Binary, "minimum", a.as_view(), b.as_view(), out)
    }

    /// numpy's `maximum`: the larger element; NaN if either is NaN;
    /// `maximum(-0, +0) = +0`.
    pub fn maximum<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary_kernel::<T, MAXIMUM>(Group::Binary, "maximum", a.as_view(), b.as_view(), out)
    }

    /// `out = a ** b`, broadcasting, with C's special cases (`pow(x, 0) = 1`
    /// even for NaN, `pow(1, y) = 1`, negative bases only to integer powers).
    pub fn pow<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        self.binary_kernel::<T, 0>(Group::Pow, "pow", a.as_view(), b.as_view(), out)
    }

    /// `mask = a OP b` element-wise as 0/1, broadcasting as [`Ops::add`];
    /// a NaN compares as IEEE says (false, but true for `ne`).
    fn compare<T: Float, const OP: usize>(
        &self,
        name: &'static str,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        let (a, b, mut mask) = (a.as_view(), b.as_view(), mask.as_view_mut());
        let shape = broadcast_out(name, &[a.shape(), b.shape()], mask.shape())?;
        let a = self.on().whole(&a, &shape, name)?;
        let b = self.on().whole(&b, &shape, name)?;
        self.same_backend(&mask.array.ctx, name)?;
        let n = mask.len();
        if n == 0 {
            return Ok(());
        }
        let kernel = kernel_for::<T, OP>(self.ctx, Group::Compare, name)?;
        self.on().write_whole(&mut mask, false, name, |m| {
            let (a, b, mut m) = (
                WholeBuffer(a.storage()),
                WholeBuffer(b.storage()),
                WholeBufferMut(m),
            );
            let args = vec![Arg::Array(&a), Arg::Array(&b), Arg::ArrayMut(&mut m)];
            self.run_kernel(&kernel, n, widened_lanes::<T>(), args)
        })
    }

    /// `mask = a < b` as 0/1, broadcasting as [`Ops::add`]; a NaN compares as IEEE says (false, but true for [`Ops::ne`]).
    pub fn lt<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, LT>("lt", a, b, mask)
    }

    /// `mask = a <= b`.
    pub fn le<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, LE>("le", a, b, mask)
    }

    /// `mask = a > b`.
    pub fn gt<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, GT>("gt", a, b, mask)
    }

    /// `mask = a >= b`.
    pub fn ge<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, GE>("ge", a, b, mask)
    }

    /// `mask = a == b` (`-0 == +0`; NaN equals nothing).
    pub fn eq<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, EQ>("eq", a, b, mask)
    }

    /// `mask = a != b` (true where either is NaN).
    pub fn ne<T: Float>(
        &self,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        mask: &mut impl AsViewMut<u8>,
    ) -> Result<()> {
        self.compare::<T, NE>("ne", a, b, mask)
    }

    /// `out = mask != 0 ? a : b` element-wise, the three broadcast to
    /// `out`'s shape (numpy's `where`).
    pub fn where_<T: Float>(
        &self,
        mask: &impl AsView<u8>,
        a: &impl AsView<T>,
        b: &impl AsView<T>,
        out: &mut impl AsViewMut<T>,
    ) -> Result<()> {
        let name = "where";
        let (mask, a, b, mut out) = (mask.as_view(), a.as_view(), b.as_view(), out.as_view_mut());
        let shape = broadcast_out(name, &[mask.shape(), a.shape(), b.shape()], out.shape())?;
        let mask = self.on().whole(&mask, &shape, name)?;
        let a = self.on().whole(&a, &shape, name)?;
        let b = self.on().whole(&b, &shape, name)?;
        self.same_backend(&out.array.ctx, name)?;
        let n = out.len();
        if n == 0 {
            return Ok(());
        }
        let kernel = kernel_for::<T, 0>(self.ctx, Group::Select, name)?;
        self.on().write_whole(&mut out, false, name, |out| {
            let (m, a, b, mut out) = (
                WholeBuffer(mask.storage()),
                WholeBuffer(a.storage()),
                WholeBuffer(b.storage()),
                WholeBufferMut(out),
            );
            let args = vec![
                Arg::Array(&m),
                Arg::Array(&a),
                Arg::Array(&b),
                Arg::ArrayMut(&mut out),
            ];
            self.run_kernel(&kernel, n, widened_lanes::<T>(), args)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    /// A context builds each kernel instance once: the ops look theirs up
    /// on every call, and building again hashed the whole source.
    #[test]
    fn a_context_builds_each_kernel_once() {
        let ctx = crate::Context::new(crate::Backend::Cpu, 0).unwrap();
        let exact = |ctx| super::kernel_for::<f32, 0>(ctx, super::Group::Exact, "t").unwrap();
        let (a, b) = (exact(&ctx), exact(&ctx));
        assert!(Arc::ptr_eq(&a.inner, &b.inner));
        let math = super::kernel_for::<f32, 0>(&ctx, super::Group::Math, "t").unwrap();
        let wide = super::kernel_for::<f64, 0>(&ctx, super::Group::Exact, "t").unwrap();
        let other_op = super::kernel_for::<f32, 1>(&ctx, super::Group::Exact, "t").unwrap();
        for k in [&math, &wide, &other_op] {
            assert!(!Arc::ptr_eq(&a.inner, &k.inner));
        }
        // Another context builds its own.
        let other = crate::Context::new(crate::Backend::Cpu, 0).unwrap();
        assert!(!Arc::ptr_eq(&a.inner, &exact(&other).inner));
    }

    /// The module's promise: each kernel is a grid-stride loop the CPU
    /// form runs as plain slices (a kernel edited out of that shape would
    /// still compute right, only slower, so only this notices). f16 and
    /// bf16 arrays stay on the general form (their conversions), by the
    /// fast path's own rule.
    #[test]
    fn every_kernel_takes_the_cpu_fast_path() {
        macro_rules! each_type {
            ($($k:ident),*) => {$(
                assert!(<(f32,) as super::$k::Instance>::CPU_GRID_STRIDE, stringify!($k));
                assert!(<(f64,) as super::$k::Instance>::CPU_GRID_STRIDE, stringify!($k));
            )*};
        }
        each_type!(
            unary_exact,
            unary_math,
            binary_op,
            binary_pow,
            compare,
            select
        );
    }
}
