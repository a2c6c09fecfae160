//! Tiled matmuls. [`wgsl_vec4`], for f32 when `k` and `n` are multiples of
//! four, moves everything in vec4s; [`wgsl`] is the general one.
//!
//! Both are batched: workgroup `z` computes `c`'s matrix `P.z0 + z` (dense
//! row-major, one after another) from `a`'s and `b`'s matrices where the
//! immediates [`P`] place them: an offset, a batch stride (0 repeats one
//! matrix), a leading dimension and whether the matrix is stored
//! transposed (column by column), all in elements. A transposed operand
//! is read in place: its tile is loaded down columns instead of along
//! rows, so neighbouring invocations still read neighbouring elements.
//!
//! The general one: each workgroup of 16×16 invocations computes a 128×128
//! tile of `c`, each invocation an 8×8 block of it (rows `ty + 16i`,
//! columns `tx + 16j`, so neighbouring invocations touch neighbouring
//! memory), from 128×8 slices of `a` and 8×128 of `b` staged in workgroup
//! memory. Each entry is a running fma over k in `A`. The inner loops are
//! written out here rather than left to the driver to unroll: the 64
//! accumulators must stay in registers.

use super::Num;

pub(crate) const TILE: u32 = 128;
const BK: u32 = 8;

/// The immediates of both kernels, in `u32`s: m, n, k, the first batch of
/// the dispatch, then a's offset, batch stride, leading dimension and
/// transposed flag, then b's.
const P: &str = "struct P { m: u32, n: u32, k: u32, z0: u32, \
                 ao: u32, ab: u32, al: u32, at: u32, bo: u32, bb: u32, bl: u32, bt: u32 }\n";

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
         {P}\
         var<immediate> p: P;\n\
         var<private> cbase: u32;\n\
         @group(0) @binding(0) var<storage, read> a: array<{s}>;\n\
         @group(0) @binding(1) var<storage, read> b: array<{s}>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<{c_ty}>;\n\
         var<workgroup> ta: array<A, {elems}>;\n\
         var<workgroup> tb: array<A, {elems}>;\n\
         {ld_a}{ld_b}\
         fn put(r: u32, col: u32, v: A) {{ if (r < p.m && col < p.n) {{ c[cbase + r * p.n + col] = {c_ty}(v); }} }}\n\
         @compute @workgroup_size(16, 16)\n\
         fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{\n    \
         let tid = l.y * 16u + l.x;\n    \
         let row0 = w.y * {TILE}u;\n    \
         let col0 = w.x * {TILE}u;\n    \
         let z = p.z0 + w.z;\n    \
         cbase = z * p.m * p.n;\n    \
         let abase = p.ao + z * p.ab;\n    \
         let bbase = p.bo + z * p.bb;\n    \
         let at = p.at == 1u;\n    \
         let bt = p.bt == 1u;\n\
         {decls}    \
         for (var k0 = 0u; k0 < p.k; k0 += {BK}u) {{\n        \
         for (var e = 0u; e < {per}u; e++) {{\n            \
         let idx = tid + e * 256u;\n            \
         let r = select(idx / {BK}u, idx % {TILE}u, at);\n            \
         let kk = select(idx % {BK}u, idx / {TILE}u, at);\n            \
         var v = A(0.0);\n            \
         if (row0 + r < p.m && k0 + kk < p.k) {{ \
         v = ld_a(abase + select((row0 + r) * p.al + k0 + kk, row0 + r + (k0 + kk) * p.al, at)); }}\n            \
         ta[kk * {TILE}u + r] = v;\n            \
         let kb = select(idx / {TILE}u, idx % {BK}u, bt);\n            \
         let cb = select(idx % {TILE}u, idx / {BK}u, bt);\n            \
         var u = A(0.0);\n            \
         if (k0 + kb < p.k && col0 + cb < p.n) {{ \
         u = ld_b(bbase + select((k0 + kb) * p.bl + col0 + cb, k0 + kb + (col0 + cb) * p.bl, bt)); }}\n            \
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
        P = P,
        ld_a = load("a"),
        ld_b = load("b"),
    )
}

/// The f32 matmul when `k` and `n` are multiples of four (1.5× the general
/// one on an H200: bench/results/2026-11-23/h200-vulkan-tuning.txt). Tiles
/// of 128×128 of `c`, 16 steps of k a stage. Each invocation computes an
/// 8×8 block as rows `4ty..4ty+4` and `64+4ty..` by columns `4tx..4tx+4`
/// and `64+4tx..`, so that its loads from workgroup memory and its stores
/// to `c` are vec4s; a warp's 32 invocations are a 4×8 block of the 16×16
/// (`tx`, `ty` from the invocation's index), so a warp's reads of a step
/// are 4 vec4s of `a`'s tile and 8 of `b`'s, not 2 and 16 (35.8 against
/// 35.1 TFLOP/s in the probe). `a`'s tile is stored transposed, rows
/// padded to 132 floats, which keeps the transposing stores to two-way
/// bank conflicts. Only for operands stored row-major whose offsets, batch strides and
/// leading dimensions are multiples of four (the vec4s stay aligned).
pub(crate) fn wgsl_vec4() -> String {
    let mut decls = String::new();
    let mut fmas = String::new();
    let mut store = String::new();
    let lane = ["x", "y", "z", "w"];
    for r in 0..8 {
        let (a, lane) = (if r < 4 { "a0" } else { "a1" }, lane[r % 4]);
        for (j, b) in ["b0", "b1"].iter().enumerate() {
            decls.push_str(&format!("    var c{r}{j} = vec4<f32>(0.0);\n"));
            fmas.push_str(&format!(
                "            c{r}{j} = fma(vec4<f32>({a}.{lane}), {b}, c{r}{j});\n"
            ));
        }
        let row = if r < 4 {
            format!("ty * 4u + {r}u")
        } else {
            format!("64u + ty * 4u + {}u", r - 4)
        };
        store.push_str(&format!(
            "    put(row0 + {row}, col4 + tx, c{r}0);\n    put(row0 + {row}, col4 + 16u + tx, c{r}1);\n"
        ));
    }
    // The stage's 16 steps of k, written out: wgpu bounds every loop (a
    // counter checked each iteration), which also kept the driver from
    // unrolling this one; written out, and with the step as the tiles'
    // constant outer index, each read's bounds check is the same for every
    // step and the driver computes it once. In the probe
    // (unigpu-vulkan-sys's `matmul_probe`, H200): 27.5 TFLOP/s as a loop,
    // 35.1 written out, 35.8 with a warp as a 4×8 block, 39.2 with the
    // tiles two-dimensional, which is faster than with every check off
    // (37.6; bench/results/2026-11-30/h200-session21-vulkan-matmul-probe-final.txt).
    let mut steps = String::new();
    for kk in 0..16 {
        steps.push_str(&format!(
            "        {{\n            \
             let a0 = ta[{kk}u][ty];\n            \
             let a1 = ta[{kk}u][16u + ty];\n            \
             let b0 = tb[{kk}u][tx];\n            \
             let b1 = tb[{kk}u][16u + tx];\n\
             {fmas}        }}\n"
        ));
    }
    // A stage's reads into a register array, each address computed where
    // it is read, then its tile stores: this form (the probe's) measured
    // 38.5-38.6 TFLOP/s in the probe, where the same reads with their
    // addresses made once before the loop measured 37.1
    // (bench/results/2026-11-30/h200-session21-vulkan-matmul-forms.txt).
    let mut loads = String::new();
    let mut stores = String::new();
    for e in 0..2 {
        loads.push_str(&format!(
            "        {{\n            \
             let idx = tid + {o}u;\n            \
             let r = idx / 4u;\n            \
             let q = idx % 4u;\n            \
             var v = vec4<f32>(0.0);\n            \
             if (row0 + r < p.m && k0 + q < k4) {{ v = a[abase + (row0 + r) * al4 + k0 + q]; }}\n            \
             ra[{e}u] = v;\n            \
             let kr = idx / 32u;\n            \
             let cq = idx % 32u;\n            \
             var u = vec4<f32>(0.0);\n            \
             if (k0 * 4u + kr < p.k && col4 + cq < n4) {{ u = b[bbase + (k0 * 4u + kr) * bl4 + col4 + cq]; }}\n            \
             rb[{e}u] = u;\n        \
             }}\n",
            o = e * 256
        ));
        stores.push_str(&format!(
            "        {{\n            \
             let idx = tid + {o}u;\n            \
             let r = idx / 4u;\n            \
             let q = idx % 4u;\n            \
             let v = ra[{e}u];\n            \
             ta[q * 4u][r / 4u][r % 4u] = v.x;\n            \
             ta[q * 4u + 1u][r / 4u][r % 4u] = v.y;\n            \
             ta[q * 4u + 2u][r / 4u][r % 4u] = v.z;\n            \
             ta[q * 4u + 3u][r / 4u][r % 4u] = v.w;\n            \
             tb[idx / 32u][idx % 32u] = rb[{e}u];\n        \
             }}\n",
            o = e * 256
        ));
    }
    format!(
        "{P}\
         var<immediate> p: P;\n\
         @group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n\
         @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;\n\
         var<workgroup> ta: array<array<vec4<f32>, 33>, 16>;\n\
         var<workgroup> tb: array<array<vec4<f32>, 32>, 16>;\n\
         var<private> cbase: u32;\n\
         fn put(r: u32, col4: u32, v: vec4<f32>) {{ if (r < p.m && col4 < p.n / 4u) {{ c[cbase + r * (p.n / 4u) + col4] = v; }} }}\n\
         @compute @workgroup_size(16, 16)\n\
         fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{\n    \
         let tid = l.y * 16u + l.x;\n    \
         let tx = (tid / 32u) % 2u * 8u + tid % 8u;\n    \
         let ty = tid / 64u * 4u + tid % 32u / 8u;\n    \
         let row0 = w.y * {TILE}u;\n    \
         let col4 = w.x * {TILE}u / 4u;\n    \
         let k4 = p.k / 4u;\n    \
         let n4 = p.n / 4u;\n    \
         let z = p.z0 + w.z;\n    \
         let abase = (p.ao + z * p.ab) / 4u;\n    \
         let bbase = (p.bo + z * p.bb) / 4u;\n    \
         let al4 = p.al / 4u;\n    \
         let bl4 = p.bl / 4u;\n    \
         cbase = z * p.m * n4;\n    \
         var ra: array<vec4<f32>, 2>;\n    \
         var rb: array<vec4<f32>, 2>;\n\
         {decls}    \
         for (var k0 = 0u; k0 < k4; k0 += 4u) {{\n\
         {loads}{stores}        \
         workgroupBarrier();\n\
         {steps}        \
         workgroupBarrier();\n    \
         }}\n\
         {store}\
         }}\n"
    )
}
