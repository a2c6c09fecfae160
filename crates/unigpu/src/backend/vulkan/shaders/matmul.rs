//! A tiled matmul: each workgroup of 16×16 invocations computes a 128×128
//! tile of `c`, each invocation an 8×8 block of it (rows `ty + 16i`,
//! columns `tx + 16j`, so neighbouring invocations touch neighbouring
//! memory), from 128×8 slices of `a` and 8×128 of `b` staged in workgroup
//! memory. Each entry is a running fma over k in `A`. The inner loops are
//! written out here rather than left to the driver to unroll: the 64
//! accumulators must stay in registers.

use super::Num;

pub(crate) const TILE: u32 = 128;
const BK: u32 = 8;

/// Reads `c`'s array type: the element type, or f32 results for the
/// 16-bit types, which a pack pass converts.
pub(crate) fn wgsl(num: Num) -> String {
    let s = num.storage();
    let c_ty = if num.packed() { "f32" } else { s };
    let load = |arr: &str| {
        if num.packed() {
            format!(
                "fn ld_{arr}(i: u32) -> A {{ let w = {arr}[i >> 1u]; \
                 return cv_in(select(w & 0xffffu, w >> 16u, (i & 1u) == 1u)); }}\n"
            )
        } else {
            format!("fn ld_{arr}(i: u32) -> A {{ return {arr}[i]; }}\n")
        }
    };
    let mut inner = String::new();
    for i in 0..8 {
        inner.push_str(&format!(
            "            let a{i} = ta[kk * {TILE}u + l.y + {}u];\n",
            16 * i
        ));
    }
    for j in 0..8 {
        inner.push_str(&format!(
            "            let b{j} = tb[kk * {TILE}u + l.x + {}u];\n",
            16 * j
        ));
    }
    for i in 0..8 {
        for j in 0..8 {
            inner.push_str(&format!(
                "            c{i}{j} = fma(a{i}, b{j}, c{i}{j});\n"
            ));
        }
    }
    let mut decls = String::new();
    let mut store = String::new();
    for i in 0..8 {
        for j in 0..8 {
            decls.push_str(&format!("    var c{i}{j} = A(0.0);\n"));
            store.push_str(&format!(
                "    put(r0 + {}u, c0 + {}u, c{i}{j});\n",
                16 * i,
                16 * j
            ));
        }
    }
    let elems = TILE * BK;
    let per = elems / 256;
    format!(
        "{prelude}\
         struct P {{ m: u32, n: u32, k: u32 }}\n\
         var<immediate> p: P;\n\
         @group(0) @binding(0) var<storage, read> a: array<{s}>;\n\
         @group(0) @binding(1) var<storage, read> b: array<{s}>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<{c_ty}>;\n\
         var<workgroup> ta: array<A, {elems}>;\n\
         var<workgroup> tb: array<A, {elems}>;\n\
         {ld_a}{ld_b}\
         fn put(r: u32, col: u32, v: A) {{ if (r < p.m && col < p.n) {{ c[r * p.n + col] = {c_ty}(v); }} }}\n\
         @compute @workgroup_size(16, 16)\n\
         fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{\n    \
         let tid = l.y * 16u + l.x;\n    \
         let row0 = w.y * {TILE}u;\n    \
         let col0 = w.x * {TILE}u;\n\
         {decls}    \
         for (var k0 = 0u; k0 < p.k; k0 += {BK}u) {{\n        \
         for (var e = 0u; e < {per}u; e++) {{\n            \
         let idx = tid + e * 256u;\n            \
         let r = idx / {BK}u;\n            \
         let kk = idx % {BK}u;\n            \
         var v = A(0.0);\n            \
         if (row0 + r < p.m && k0 + kk < p.k) {{ v = ld_a((row0 + r) * p.k + k0 + kk); }}\n            \
         ta[kk * {TILE}u + r] = v;\n            \
         let kb = idx / {TILE}u;\n            \
         let cb = idx % {TILE}u;\n            \
         var u = A(0.0);\n            \
         if (k0 + kb < p.k && col0 + cb < p.n) {{ u = ld_b((k0 + kb) * p.n + col0 + cb); }}\n            \
         tb[kb * {TILE}u + cb] = u;\n        \
         }}\n        \
         workgroupBarrier();\n        \
         for (var kk = 0u; kk < {BK}u; kk++) {{\n\
         {inner}        \
         }}\n        \
         workgroupBarrier();\n    \
         }}\n    \
         let r0 = row0 + l.y;\n    \
         let c0 = col0 + l.x;\n\
         {store}\
         }}\n",
        prelude = num.prelude(),
        ld_a = load("a"),
        ld_b = load("b"),
    )
}
