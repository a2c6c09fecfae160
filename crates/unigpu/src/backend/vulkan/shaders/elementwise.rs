//! Element-wise shaders over a 2-D grid of workgroups, so that arrays past
//! 65,535 workgroups fit. An invocation takes one array element (a word of
//! two elements for f16/bf16), or, in the vec4 form (f32 arrays whose
//! length is a multiple of four), two vec4s a grid apart: 16-byte loads and
//! more of them in flight, 1.35× the scalar form's bandwidth on an H200
//! (bench/results/2026-11-23/h200-vulkan-tuning.txt). `p.n` counts the
//! array's units (elements, words or vec4s), `p.nx` the invocations of one
//! grid row.

use super::{FmaKind, Num};
use crate::ops::{Binary, Unary};

/// What an element-wise shader computes, as an expression in `x` (and `y`)
/// of the accumulator type `A`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Map {
    Binary(Binary),
    Unary(Unary),
    /// `y = alpha * x + y`, one rounding (fma).
    Axpy,
    /// `x = alpha * x`.
    Scale,
}

/// vec4s an invocation takes in the vec4 form.
pub(crate) const VEC4_PER_INVOCATION: u64 = 2;

impl Map {
    fn expr(self) -> &'static str {
        match self {
            Map::Binary(Binary::Add) => "x + y",
            Map::Binary(Binary::Sub) => "x - y",
            Map::Binary(Binary::Mul) => "x * y",
            Map::Unary(Unary::Relu) => "relu(x)",
            Map::Unary(Unary::Sigmoid) => "sigmoid(x)",
            Map::Unary(Unary::Tanh) => "tanh_(x)",
            Map::Axpy => "fma_(p.alpha, x, y)",
            Map::Scale => "p.alpha * x",
        }
    }

    pub(crate) fn name(self) -> String {
        format!("{self:?}").to_lowercase()
    }

    /// The bindings in order: `true` for read-only.
    pub(crate) fn bindings(self) -> &'static [bool] {
        match self {
            Map::Binary(_) => &[true, true, false],
            Map::Unary(_) => &[true, false],
            Map::Axpy => &[true, false],
            Map::Scale => &[false],
        }
    }

    /// The shader for `num`, computing axpy's `a * x + y` as `fma` says;
    /// `vec4`: the vec4 form (f32 only).
    pub(crate) fn wgsl(self, num: Num, fma: FmaKind, vec4: bool) -> String {
        let s = if vec4 {
            format!("vec4<{}>", num.storage())
        } else {
            num.storage().to_string()
        };
        let (decls, inputs, out) = match self {
            Map::Binary(_) => (
                format!(
                    "@group(0) @binding(0) var<storage, read> a: array<{s}>;\n\
                     @group(0) @binding(1) var<storage, read> b: array<{s}>;\n\
                     @group(0) @binding(2) var<storage, read_write> o: array<{s}>;\n"
                ),
                ["a[i]", "b[i]"],
                "o[i]",
            ),
            Map::Unary(_) => (
                format!(
                    "@group(0) @binding(0) var<storage, read> a: array<{s}>;\n\
                     @group(0) @binding(1) var<storage, read_write> o: array<{s}>;\n"
                ),
                ["a[i]", "a[i]"],
                "o[i]",
            ),
            Map::Axpy => (
                format!(
                    "@group(0) @binding(0) var<storage, read> a: array<{s}>;\n\
                     @group(0) @binding(1) var<storage, read_write> o: array<{s}>;\n"
                ),
                ["a[i]", "o[i]"],
                "o[i]",
            ),
            Map::Scale => (
                format!("@group(0) @binding(0) var<storage, read_write> o: array<{s}>;\n"),
                ["o[i]", "o[i]"],
                "o[i]",
            ),
        };
        let math = match self {
            Map::Unary(_) => num.math(),
            Map::Axpy => num.fma(fma).to_string(),
            _ => String::new(),
        };
        let [x, y] = inputs;
        let body = if vec4 {
            format!(
                "let vx = {x};\n    let vy = {y};\n    \
                 {out} = vec4<A>(f(vx.x, vy.x), f(vx.y, vy.y), f(vx.z, vy.z), f(vx.w, vy.w));"
            )
        } else if num.packed() {
            format!(
                "let vx = lo2({x});\n    let vy = lo2({y});\n    \
                 {out} = st2(f(vx.x, vy.x), f(vx.y, vy.y));"
            )
        } else {
            format!("{out} = f({x}, {y});")
        };
        format!(
            "{prelude}{math}\
             struct P {{ n: u32, nx: u32, alpha: A }}\n\
             var<immediate> p: P;\n\
             {decls}\
             fn f(x: A, y: A) -> A {{ return {expr}; }}\n\
             fn at(i: u32) {{\n    \
             {body}\n\
             }}\n\
             @compute @workgroup_size(256)\n\
             fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) w: vec3<u32>) {{\n    \
             let i = g.x + g.y * p.nx;\n    \
             {visit}\n\
             }}\n",
            prelude = num.prelude(),
            expr = self.expr(),
            visit = if vec4 {
                format!(
                    "let stride = w.x * w.y * 256u;\n    \
                     for (var j = 0u; j < {VEC4_PER_INVOCATION}u; j++) {{ \
                     if (i + j * stride < p.n) {{ at(i + j * stride); }} }}"
                )
            } else {
                "if (i < p.n) { at(i); }".to_string()
            },
        )
    }
}

/// Packs a matmul's f32 results into f16/bf16 words (two per invocation).
pub(crate) fn pack(num: Num) -> String {
    format!(
        "{prelude}\
         struct P {{ n: u32, nx: u32, len: u32 }}\n\
         var<immediate> p: P;\n\
         @group(0) @binding(0) var<storage, read> t: array<f32>;\n\
         @group(0) @binding(1) var<storage, read_write> o: array<u32>;\n\
         @compute @workgroup_size(256)\n\
         fn main(@builtin(global_invocation_id) g: vec3<u32>) {{\n    \
         let i = g.x + g.y * p.nx;\n    \
         if (i >= p.n) {{ return; }}\n    \
         let hi = select(0.0, t[min(2u * i + 1u, p.len - 1u)], 2u * i + 1u < p.len);\n    \
         o[i] = st2(t[2u * i], hi);\n\
         }}\n",
        prelude = num.prelude(),
    )
}
