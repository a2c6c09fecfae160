//! Reductions in two passes, shaped like the CUDA backend's: at most 1,024
//! workgroups of 256 invocations, each invocation adding its grid-stride
//! share serially in `A`, a 256-wide tree in workgroup memory, one partial
//! per workgroup; then one workgroup folds the partials the same way. The
//! error bound in docs/testing.md holds as it does for CUDA.

use super::Num;
use crate::ops::Reduce;

/// Workgroups of the first pass at most.
pub(crate) const MAX_GROUPS: usize = 1024;

fn identity(op: Reduce, num: Num) -> &'static str {
    match (op, num.acc_num()) {
        // NaN: "no number yet" for max, which ignores NaNs.
        (Reduce::Max, Num::F64) => "bitcast<f64>(0x7ff8000000000000lu)",
        (Reduce::Max, _) => "bitcast<f32>(0x7fc00000u)",
        _ => "A(0.0)",
    }
}

/// The shader reducing `x` (and `y`, for dot) into `out[p.base + group]`.
/// `p.n` counts array elements (words for the 16-bit types), `p.len` the
/// elements, so a word's padding half is never counted.
pub(crate) fn wgsl(op: Reduce, num: Num) -> String {
    let s = num.storage();
    let combine = match op {
        Reduce::Max => "select(acc, v, is_nan(acc) || (!is_nan(v) && v > acc))",
        _ => "acc + v",
    };
    let y_decl = if op == Reduce::Dot {
        format!("@group(0) @binding(1) var<storage, read> y: array<{s}>;\n")
    } else {
        String::new()
    };
    let out_binding = if op == Reduce::Dot { 2 } else { 1 };
    let step = match (op, num.packed()) {
        (Reduce::Dot, false) => "acc = fma(x[i], y[i], acc);".to_string(),
        (Reduce::Dot, true) => "let vx = lo2(x[i]);\n        let vy = lo2(y[i]);\n        \
             acc = fma(vx.x, vy.x, acc);\n        \
             if (2u * i + 1u < p.len) { acc = fma(vx.y, vy.y, acc); }"
            .to_string(),
        (_, false) => "acc = comb(acc, x[i]);".to_string(),
        (_, true) => "let vx = lo2(x[i]);\n        acc = comb(acc, vx.x);\n        \
             if (2u * i + 1u < p.len) { acc = comb(acc, vx.y); }"
            .to_string(),
    };
    format!(
        "{prelude}\
         struct P {{ n: u32, len: u32, base: u32 }}\n\
         var<immediate> p: P;\n\
         @group(0) @binding(0) var<storage, read> x: array<{s}>;\n\
         {y_decl}\
         @group(0) @binding({out_binding}) var<storage, read_write> out: array<A>;\n\
         var<workgroup> tile: array<A, 256>;\n\
         fn comb(acc: A, v: A) -> A {{ return {combine}; }}\n\
         @compute @workgroup_size(256)\n\
         fn main(@builtin(local_invocation_id) l: vec3<u32>,\n        \
         @builtin(workgroup_id) w: vec3<u32>,\n        \
         @builtin(num_workgroups) nw: vec3<u32>) {{\n    \
         let stride = nw.x * 256u;\n    \
         var acc: A = {id};\n    \
         for (var i = w.x * 256u + l.x; i < p.n; i += stride) {{\n        \
         {step}\n    \
         }}\n    \
         tile[l.x] = acc;\n    \
         workgroupBarrier();\n    \
         for (var h = 128u; h > 0u; h >>= 1u) {{\n        \
         if (l.x < h) {{ tile[l.x] = comb(tile[l.x], tile[l.x + h]); }}\n        \
         workgroupBarrier();\n    \
         }}\n    \
         if (l.x == 0u) {{ out[p.base + w.x] = tile[0]; }}\n\
         }}\n",
        prelude = num.prelude(),
        id = identity(op, num),
    )
}
