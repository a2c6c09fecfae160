//! The built-in ops' WGSL, generated per element type. Arithmetic is done
//! in the accumulator type (f32, or f64 for f64 arrays), as on every
//! backend. f16 and bf16 arrays are read and written as 32-bit words of two
//! elements, converted with integer code that rounds to nearest-even as the
//! host's `half` does, so they need no shader-f16 and compute in f32; f64
//! needs the adapter's shader-f64 (and shader-int64, for its NaN test).
//! Transcendental functions are computed here, not by the driver's `exp`
//! and `tanh`, whose accuracy WGSL leaves loose: every adapter gives the
//! same few-ulp results.

pub(crate) mod elementwise;
pub(crate) mod fill;
pub(crate) mod matmul;
pub(crate) mod reduce;

use crate::element::DType;

/// How a shader computes `a * b + c` for axpy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FmaKind {
    /// The driver's `fma` rounds once.
    Fused,
    /// The driver's `fma` rounds twice (lavapipe; WGSL allows it), but f64
    /// is there to compute an f32 one exactly in: one rounding but for
    /// ties (see [`Num::fma`]).
    ThroughF64,
    /// Neither: a product and a sum, each rounded (f64 on lavapipe: no
    /// wider type to emulate with; the driver's optimizer rewrites the
    /// error-free transformations that would).
    TwoRoundings,
}

/// A floating-point element type the built-in ops compute on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Num {
    F32,
    F64,
    F16,
    Bf16,
}

impl Num {
    pub(crate) fn of(dtype: DType) -> Option<Num> {
        match dtype {
            DType::F32 => Some(Num::F32),
            DType::F64 => Some(Num::F64),
            DType::F16 => Some(Num::F16),
            DType::BF16 => Some(Num::Bf16),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Num::F32 => "f32",
            Num::F64 => "f64",
            Num::F16 => "f16",
            Num::Bf16 => "bf16",
        }
    }

    /// The type arithmetic is done in.
    pub(crate) fn acc(self) -> &'static str {
        match self {
            Num::F64 => "f64",
            _ => "f32",
        }
    }

    /// The accumulator's own `Num` (f32 for the 16-bit types).
    pub(crate) fn acc_num(self) -> Num {
        match self {
            Num::F64 => Num::F64,
            _ => Num::F32,
        }
    }

    pub(crate) fn acc_bytes(self) -> usize {
        match self {
            Num::F64 => 8,
            _ => 4,
        }
    }

    /// Two elements to a 32-bit word.
    pub(crate) fn packed(self) -> bool {
        matches!(self, Num::F16 | Num::Bf16)
    }

    /// The WGSL element type of the arrays.
    pub(crate) fn storage(self) -> &'static str {
        if self.packed() { "u32" } else { self.acc() }
    }

    /// Array elements (words for the 16-bit types) holding `len` elements.
    pub(crate) fn units(self, len: usize) -> usize {
        if self.packed() { len.div_ceil(2) } else { len }
    }

    /// What every shader of this type starts with: the accumulator alias
    /// `A`, `is_nan`, `inf`, and for the 16-bit types the conversions.
    pub(crate) fn prelude(self) -> String {
        let mut s = format!("alias A = {};\n", self.acc());
        s.push_str(match self.acc_num() {
            Num::F64 => {
                "fn is_nan(x: A) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu; }\n\
                 fn inf() -> A { return bitcast<f64>(0x7ff0000000000000lu); }\n"
            }
            _ => {
                "fn is_nan(x: A) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n\
                 fn inf() -> A { return bitcast<f32>(0x7f800000u); }\n"
            }
        });
        match self {
            Num::F16 => {
                s.push_str(unigpu_shader_text::F16_WGSL);
                s.push_str(F16);
            }
            Num::Bf16 => {
                s.push_str(unigpu_shader_text::BF16_WGSL);
                s.push_str(BF16);
            }
            _ => {}
        }
        if self.packed() {
            s.push_str(
                "fn lo2(w: u32) -> vec2<f32> { return vec2<f32>(cv_in(w & 0xffffu), cv_in(w >> 16u)); }\n\
                 fn st2(x: f32, y: f32) -> u32 { return cv_out(x) | (cv_out(y) << 16u); }\n",
            );
        }
        s
    }

    /// `fma_(a, b, c)`: `a * b + c`, rounded once where `how` can.
    pub(crate) fn fma(self, how: FmaKind) -> &'static str {
        match how {
            FmaKind::Fused => "fn fma_(a: A, b: A, c: A) -> A { return fma(a, b, c); }\n",
            // An f32 product is exact in f64, so the f64 sum is rounded once
            // before the f32 rounding; the two roundings differ from one only
            // when the first lands on an f32 tie, which needs the exact sum
            // to carry more than 53 bits (c 2^29 times smaller than a·b, or
            // the reverse) with bits 25 to 53 of it exactly 10...0.
            FmaKind::ThroughF64 => {
                "fn fma_(a: A, b: A, c: A) -> A { return f32(f64(a) * f64(b) + f64(c)); }\n"
            }
            FmaKind::TwoRoundings => "fn fma_(a: A, b: A, c: A) -> A { return a * b + c; }\n",
        }
    }

    /// exp, expm1, sigmoid, tanh and relu in `A`.
    pub(crate) fn math(self) -> String {
        let c = match self.acc_num() {
            Num::F64 => MathConsts {
                ln2_hi: "6.93147180369123816490e-01",
                ln2_lo: "1.90821492927058770002e-10",
                exp_hi: "709.782712893384",
                exp_lo: "-745.1332191019412",
                tanh_one: "20.0",
                terms: 14,
            },
            _ => MathConsts {
                ln2_hi: "0.693359375",
                ln2_lo: "-2.12194440e-4",
                exp_hi: "88.72283905206835",
                exp_lo: "-103.97208",
                tanh_one: "10.0",
                terms: 8,
            },
        };
        // e^r - 1 = r (1 + r (1/2! + r (1/3! + ...))), Horner from the top.
        let mut poly = format!("A(1.0 / {}.0)", factorial(c.terms));
        for n in (1..c.terms).rev() {
            poly = format!("A(1.0 / {}.0) + r * ({poly})", factorial(n));
        }
        format!(
            r#"
const LOG2E = A(1.4426950408889634);
const LN2_HI = A({ln2_hi});
const LN2_LO = A({ln2_lo});
// e^y = 2^k (1 + q): k = round(y / ln 2), q = e^r - 1 with |r| <= ln2/2,
// r from a two-part ln 2 (Cody-Waite) so that k * LN2_HI is exact.
fn exp_q(y: A, k: A) -> A {{
    let r = (y - k * LN2_HI) - k * LN2_LO;
    return r * ({poly});
}}
fn exp_(x: A) -> A {{
    if (is_nan(x)) {{ return x; }}
    if (x > A({exp_hi})) {{ return inf(); }}
    if (x < A({exp_lo})) {{ return A(0.0); }}
    let k = round(x * LOG2E);
    return ldexp(A(1.0) + exp_q(x, k), i32(k));
}}
// e^y - 1 for 0 <= y <= 2 * {tanh_one}, without cancellation near 0.
fn expm1_(y: A) -> A {{
    let k = round(y * LOG2E);
    let q = exp_q(y, k);
    if (k == A(0.0)) {{ return q; }}
    let ik = i32(k);
    return ldexp(q, ik) + (ldexp(A(1.0), ik) - A(1.0));
}}
fn relu(x: A) -> A {{
    if (is_nan(x) || x > A(0.0)) {{ return x; }}
    return A(0.0);
}}
fn sigmoid(x: A) -> A {{
    if (is_nan(x)) {{ return x; }}
    return A(1.0) / (A(1.0) + exp_(-x));
}}
// tanh |x| = m / (m + 2) with m = e^(2|x|) - 1; 1 past where that rounds to 1.
fn tanh_(x: A) -> A {{
    if (is_nan(x)) {{ return x; }}
    let a = abs(x);
    var t = A(1.0);
    if (a <= A({tanh_one})) {{
        let m = expm1_(A(2.0) * a);
        t = m / (m + A(2.0));
    }}
    return select(t, -t, x < A(0.0));
}}
"#,
            ln2_hi = c.ln2_hi,
            ln2_lo = c.ln2_lo,
            exp_hi = c.exp_hi,
            exp_lo = c.exp_lo,
            tanh_one = c.tanh_one,
        )
    }
}

struct MathConsts {
    ln2_hi: &'static str,
    ln2_lo: &'static str,
    exp_hi: &'static str,
    exp_lo: &'static str,
    tanh_one: &'static str,
    terms: u64,
}

fn factorial(n: u64) -> u64 {
    (1..=n).product()
}

/// The shaders convert with `cv_in`/`cv_out`, whichever the element type;
/// the conversions themselves are unigpu-shader-text's, shared with the
/// kernels `#[unigpu::kernel]` writes.
const F16: &str = "
fn cv_in(h: u32) -> f32 { return ug_f16_in(h); }
fn cv_out(f: f32) -> u32 { return ug_f16_out(f); }
";

const BF16: &str = "
fn cv_in(h: u32) -> f32 { return ug_bf16_in(h); }
fn cv_out(f: f32) -> u32 { return ug_bf16_out(f); }
";

/// Bytes of immediate data (push constants) the built-in ops use (the
/// batched matmul's twelve words the most); Vulkan guarantees 128.
pub(crate) const IMMEDIATE_BYTES: u32 = 48;

/// The immediate data (push constants) of one dispatch, laid out as the
/// shaders' `struct P` declares it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Imm {
    bytes: [u8; IMMEDIATE_BYTES as usize],
}

impl Default for Imm {
    fn default() -> Imm {
        Imm {
            bytes: [0; IMMEDIATE_BYTES as usize],
        }
    }
}

impl Imm {
    pub(crate) fn u32(mut self, at: usize, v: u32) -> Imm {
        self.bytes[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }

    /// `v` in the accumulator type of `num`, at byte 8 (its 8-byte slot).
    pub(crate) fn acc(mut self, num: Num, v: f64) -> Imm {
        match num.acc_num() {
            Num::F64 => self.bytes[8..16].copy_from_slice(&v.to_ne_bytes()),
            _ => self.bytes[8..12].copy_from_slice(&(v as f32).to_ne_bytes()),
        }
        self
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
