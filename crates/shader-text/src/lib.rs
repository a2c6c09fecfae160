//! Shader source that more than one crate emits: the built-in ops'
//! shaders (unigpu's vulkan backend) and the kernels `#[unigpu::kernel]`
//! writes (unigpu-kernel-macros) convert f16 and bf16 the same way, so the
//! text lives here once. A leaf crate: it depends on nothing, and both the
//! proc macro (at compile time) and the facade (at run time) read it.

/// WGSL: `ug_f16_in(h: u32) -> f32` and `ug_f16_out(f: f32) -> u32`, f16
/// (the low 16 bits) <-> f32 in integer arithmetic: exact one way, round to
/// nearest even the other, subnormals, infinities and NaN (kept quiet)
/// included, as the host's `half` does. WGSL's own `pack2x16float` need
/// not round to nearest, and `f16` needs an extension, so neither is used.
pub const F16_WGSL: &str = r#"fn ug_f16_in(h: u32) -> f32 {
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 0u) { return bitcast<f32>(s | bitcast<u32>(f32(m) * 5.9604644775390625e-8)); }
    if (e == 31u) { return bitcast<f32>(s | 0x7f800000u | (m << 13u)); }
    return bitcast<f32>(s | ((e + 112u) << 23u) | (m << 13u));
}
fn ug_f16_out(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    let s = (x >> 16u) & 0x8000u;
    let a = x & 0x7fffffffu;
    if (a > 0x7f800000u) { return s | 0x7e00u | ((a >> 13u) & 0x3ffu); }
    if (a >= 0x477ff000u) { return s | 0x7c00u; }
    if (a < 0x38800000u) {
        let e = a >> 23u;
        if (e < 102u) { return s; }
        let m = (a & 0x7fffffu) | 0x800000u;
        let shift = 126u - e;
        var r = m >> shift;
        let rest = m & ((1u << shift) - 1u);
        let half = 1u << (shift - 1u);
        if (rest > half || (rest == half && (r & 1u) == 1u)) { r = r + 1u; }
        return s | r;
    }
    var r = (a >> 13u) - (112u << 10u);
    let rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1u) == 1u)) { r = r + 1u; }
    return s | r;
}
"#;

/// WGSL: `ug_bf16_in(h: u32) -> f32` and `ug_bf16_out(f: f32) -> u32`: bf16
/// is the top half of an f32; round to nearest even, NaN kept quiet (as
/// `half` does).
pub const BF16_WGSL: &str = r#"fn ug_bf16_in(h: u32) -> f32 { return bitcast<f32>(h << 16u); }
fn ug_bf16_out(f: f32) -> u32 {
    let x = bitcast<u32>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) { return ((x >> 16u) | 0x40u) & 0xffffu; }
    return ((x + 0x7fffu + ((x >> 16u) & 1u)) >> 16u) & 0xffffu;
}
"#;
