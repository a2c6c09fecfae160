//! Grid-stride loops widened to 16-byte accesses on the CUDA form, as the
//! built-in element-wise ops move their data (a `float4` a load): on an
//! H200 the one-element-a-load saxpy reached 0.83x the built-in axpy's
//! bandwidth (docs/kernels.md, "Speed").
//!
//! Only a kernel [`crate::stride::analyse`] accepts is widened: its
//! iterations are independent and touch their written arrays at `i` alone,
//! so running them in another order, or four at a time, gives the same
//! results. The widened form runs, before the original loop:
//!
//! ```text
//! vn = min(END, len of every widened array) / W
//! if every widened array starts on 16 bytes:
//!     for v = i; v < vn; v += stride:      // W consecutive iterations
//!         load the arrays read at i as W-wide vectors
//!         for lane in 0..W: the iteration with i = v*W + lane, array[i] -> its lane
//!         store the written arrays' vectors
//!     i = vn*W + i                          // the original loop does the rest
//! ```
//!
//! Every index below `vn * W` is in bounds of every widened array and below
//! END, so the widened part has no check to make; the original loop then
//! runs the iterations from `vn * W` on, with their checks and fault
//! reports, exactly as it would have. An array whose memory does not start
//! on 16 bytes (a DLPack import at an offset) leaves the whole range to the
//! original loop.

use crate::ir::*;
use crate::stride::GridStride;

/// A widened grid-stride loop.
pub struct Widened<'k> {
    pub loop_: GridStride<'k>,
    /// The step's stride operand (`i += stride`).
    pub step: &'k Expr,
    /// Elements a vector: 16 bytes over the arrays' element size.
    pub lanes: u32,
    /// Arrays loaded as vectors before the lanes run: the ones the
    /// iteration reads at `i`, and the written ones it may leave unwritten
    /// (a store under a condition keeps the other lanes' values).
    pub loads: Vec<usize>,
    /// Written arrays, stored as vectors after the lanes.
    pub stores: Vec<usize>,
}

impl Widened<'_> {
    /// Every widened array, in parameter order.
    pub fn arrays(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.loads.iter().chain(&self.stores).copied().collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Every widened array with its parameter's name, in parameter order.
    pub fn named(&self, k: &Kernel) -> Vec<(usize, String)> {
        self.arrays()
            .into_iter()
            .map(|a| (a, k.params[a].name.clone()))
            .collect()
    }

    /// Whether every widened array's vector is 16 bytes (one element
    /// width), the only shape the WGSL form binds as vectors.
    pub fn one_width(&self, k: &Kernel) -> bool {
        self.arrays()
            .iter()
            .all(|&a| vector_bytes(k, self, a) == 16)
    }

    /// The comment a GPU form's widened part opens with.
    pub fn comment(&self) -> String {
        format!(
            "// {} iterations at a time, in vector accesses (widen.rs).",
            self.lanes
        )
    }
}

/// The kernel's grid-stride loop, widened, or `None` where it is not an
/// independent grid-stride loop or its arrays do not share one element
/// width, 4 or 8 bytes (f32, i32 and u32 mix; so do f64, i64 and u64),
/// with u8 arrays beside them allowed. That width sets the lanes
/// (16 bytes of it); a narrower array moves as a vector of as many lanes
/// (a comparison's u8 mask beside f32 operands: 4 bytes a vector).
/// f16/bf16 arrays are left alone: their lanes would need conversions.
pub fn plan(k: &Kernel) -> Option<Widened<'_>> {
    let loop_ = crate::stride::analyse(k)?;
    let Some(Stmt::While { body, .. }) = k.body.last() else {
        return None;
    };
    let Some(Stmt::Assign { value, .. }) = body.last() else {
        return None;
    };
    let ExprKind::Bin(BinOp::Add, l, r) = &value.kind else {
        return None;
    };
    let is_var = |e: &Expr| matches!(&e.kind, ExprKind::Var(n) if *n == loop_.var);
    let step: &Expr = if is_var(l) { r } else { l };

    let at_i = |index: &Expr| is_var(index);
    let mut read = Vec::new();
    visit_exprs(loop_.body, &mut |e| {
        if let ExprKind::Load(a, index, _) = &e.kind
            && at_i(index)
            && loop_.sliced.contains(a)
            && !read.contains(a)
        {
            read.push(*a);
        }
    });
    let mut written = Vec::new();
    crate::stride::stores(loop_.body, &mut |a, _| {
        if !written.contains(&a) {
            written.push(a);
        }
    });
    // A store at the iteration's top level runs in every iteration (the
    // loop has no `continue`, `break` or `return` of its own).
    let always: Vec<usize> = loop_
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Store { array, .. } => Some(*array),
            _ => None,
        })
        .collect();
    let mut loads = read;
    for &a in &written {
        if !always.contains(&a) && !loads.contains(&a) {
            loads.push(a);
        }
    }
    loads.sort_unstable();
    written.sort_unstable();

    // The one width of the arrays that are not u8.
    let mut widest: Option<u32> = None;
    for &a in loads.iter().chain(&written) {
        let ParamKind::Array { elem, .. } = k.params[a].kind else {
            return None;
        };
        match elem {
            Ty::U8 => {}
            Ty::F32 | Ty::I32 | Ty::U32 | Ty::F64 | Ty::I64 | Ty::U64
                if widest.is_none_or(|b| b == elem.bits()) =>
            {
                widest = Some(elem.bits());
            }
            _ => return None,
        }
    }
    // Only bytes: no wider element to set the lanes.
    let widest = widest?;
    Some(Widened {
        step,
        lanes: 128 / widest,
        loads,
        stores: written,
        loop_,
    })
}

/// The bytes of array `a`'s vector in `w` (its lanes' elements).
pub fn vector_bytes(k: &Kernel, w: &Widened, a: usize) -> u32 {
    match k.params[a].kind {
        ParamKind::Array { elem, .. } => w.lanes * elem.bits() / 8,
        ParamKind::Scalar(_) => unreachable!("widened arrays are arrays"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn kernel(src: &str) -> Kernel {
        crate::inbounds::tests::kernel(syn::parse_str(src).unwrap(), [256, 1, 1])
    }

    /// The grid-stride saxpy every GPU form widens.
    pub(super) fn saxpy() -> Kernel {
        kernel(
            "fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
                let stride = num_workgroups().x * workgroup_size().x;
                let mut i = global_id().x;
                while i < y.len() { y[i] = a * x[i] + y[i]; i += stride; }
            }",
        )
    }

    #[test]
    fn saxpy_is_widened_with_y_loaded_and_stored() {
        let k = saxpy();
        let w = plan(&k).expect("widened");
        assert_eq!(w.lanes, 4);
        assert_eq!((w.loads.clone(), w.stores.clone()), (vec![1, 2], vec![2]));
    }

    #[test]
    fn a_write_only_output_is_not_loaded_unless_its_store_is_conditional() {
        let always = kernel(
            "fn copy(x: &[f64], y: &mut [f64]) {
                let mut i = global_id().x;
                while i < y.len() { y[i] = x[i]; i += num_workgroups().x * workgroup_size().x; }
            }",
        );
        let w = plan(&always).expect("widened");
        assert_eq!(
            (w.lanes, w.loads.clone(), w.stores.clone()),
            (2, vec![0], vec![1])
        );
        let sometimes = kernel(
            "fn copy_pos(x: &[f64], y: &mut [f64]) {
                let mut i = global_id().x;
                while i < y.len() {
                    if x[i] > 0.0 { y[i] = x[i]; }
                    i += num_workgroups().x * workgroup_size().x;
                }
            }",
        );
        assert_eq!(plan(&sometimes).expect("widened").loads, vec![0, 1]);
    }

    #[test]
    fn mixed_widths_and_other_shapes_are_left_alone() {
        for src in [
            // f32 in, f64 out: no one vector width of lanes.
            "fn widen(x: &[f32], y: &mut [f64]) {
                let mut i = global_id().x;
                while i < y.len() { y[i] = x[i] as f64; i += num_workgroups().x * workgroup_size().x; }
            }",
            // One element an invocation, no loop.
            "fn add(x: &[f32], y: &mut [f32]) {
                let i = global_id().x;
                if i < y.len() { y[i] = x[i] + y[i]; }
            }",
            // A neighbour's element: not independent.
            "fn shift(y: &mut [f32]) {
                let mut i = global_id().x;
                while i + 1 < y.len() { y[i] = y[i + 1]; i += num_workgroups().x * workgroup_size().x; }
            }",
        ] {
            assert!(plan(&kernel(src)).is_none(), "{src}");
        }
    }
}

#[cfg(test)]
mod cuda_tests {
    #[test]
    fn the_cuda_form_runs_the_widened_part_before_the_checked_loop() {
        let k = super::tests::saxpy();
        let src = crate::cuda::emit(&k);
        let at = |s: &str| src.find(s).unwrap_or_else(|| panic!("no `{s}` in\n{src}"));
        // The vector length: END and both arrays' lengths, over 4 lanes.
        at("unsigned int ug_vn = n_y;");
        at("if (n_x < ug_vn) ug_vn = n_x;");
        at("ug_vn /= 4u;");
        at("if (((((unsigned long long)p_x | (unsigned long long)p_y) & 15ull)) == 0ull) {");
        // Lanes read and write the vectors, unchecked; the loop after them
        // starts where they stopped and keeps its checks.
        at("ug_w_y.v[ug_l] = ((p_a * ug_w_x.v[ug_l]) + ug_w_y.v[ug_l]);");
        let store = at("reinterpret_cast<ug_vec<float, 4u>*>(p_y)[ug_v] = ug_w_y;");
        let restart = at("v_i_1 = ug_vn * 4u + v_i_1;");
        let checked = at("ug_ld_f32(p_x, n_x, v_i_1,");
        assert!(store < restart && restart < checked);
    }
}

#[cfg(test)]
mod mixed_tests {
    /// A comparison: f32 operands, a u8 mask.
    fn less() -> crate::ir::Kernel {
        super::tests::kernel(
            "fn less(a: &[f32], b: &[f32], m: &mut [u8]) {
                let stride = num_workgroups().x * workgroup_size().x;
                let mut i = global_id().x;
                while i < m.len() { m[i] = (a[i] < b[i]) as u32; i += stride; }
            }",
        )
    }

    #[test]
    fn a_u8_array_beside_f32_moves_four_bytes_a_vector_on_cuda_only() {
        let k = less();
        let w = super::plan(&k).expect("widened");
        assert_eq!(
            (w.lanes, w.loads.clone(), w.stores.clone()),
            (4, vec![0, 1], vec![2])
        );
        assert_eq!(
            [0, 1, 2].map(|a| super::vector_bytes(&k, &w, a)),
            [16, 16, 4]
        );
        assert!(!w.one_width(&k));
        let src = crate::cuda::emit(&k);
        let at = |s: &str| src.find(s).unwrap_or_else(|| panic!("no `{s}` in\n{src}"));
        // Each array aligned to its own vector.
        at(
            "if (((((unsigned long long)p_a | (unsigned long long)p_b) & 15ull) | (((unsigned long long)p_m) & 3ull)) == 0ull) {",
        );
        at("ug_vec<unsigned char, 4u> ug_w_m;");
        at("reinterpret_cast<ug_vec<unsigned char, 4u>*>(p_m)[ug_v] = ug_w_m;");
        at("ug_w_m.v[ug_l] = ((unsigned int)((ug_w_a.v[ug_l] < ug_w_b.v[ug_l])));");
        // The WGSL form binds u8 arrays one element a u32: not widened.
        let wgsl = crate::wgsl::emit(&k, false);
        assert!(!wgsl.contains("vec4") && !wgsl.contains("ug_vn"), "{wgsl}");
    }

    #[test]
    fn bytes_alone_or_with_two_other_widths_are_left_alone() {
        for src in [
            "fn copy(x: &[u8], y: &mut [u8]) {
                let mut i = global_id().x;
                while i < y.len() { y[i] = x[i]; i += num_workgroups().x * workgroup_size().x; }
            }",
            "fn pick(m: &[u8], x: &[f32], y: &mut [f64]) {
                let mut i = global_id().x;
                while i < y.len() { if m[i] != 0u32 { y[i] = x[i] as f64; } i += num_workgroups().x * workgroup_size().x; }
            }",
        ] {
            let k = super::tests::kernel(src);
            assert!(super::plan(&k).is_none(), "{src}");
        }
    }
}

#[cfg(test)]
mod wgsl_tests {
    #[test]
    fn the_wgsl_form_binds_widened_arrays_as_vectors_and_writes_the_lanes_out() {
        let k = super::tests::saxpy();
        let src = crate::wgsl::emit(&k, false);
        let at = |s: &str| src.find(s).unwrap_or_else(|| panic!("no `{s}` in\n{src}"));
        at("var<storage, read> p_x: array<vec4<f32>>;");
        at("var<storage, read_write> p_y: array<vec4<f32>>;");
        at("ug_vn = min(ug_vn, n_x);");
        at("var ug_w_x = p_x[ug_v];");
        // Four lanes, with constant vector indices.
        assert!(!src.contains("let v_i_1"), "a lane declares i:\n{src}");
        for lane in 0..4 {
            at(&format!(
                "ug_w_y[{lane}] = ((p_a * ug_w_x[{lane}]) + ug_w_y[{lane}]);"
            ));
        }
        let store = at("p_y[ug_v] = ug_w_y;");
        let restart = at("v_i_1 = ug_vn * 4u + v_i_1;");
        // The loop after: one lane of a vector per element, x checked.
        let checked = at("ug_ld_x(v_i_1,");
        assert!(store < restart && restart < checked);
        at("if (i < n_x) { return p_x[i >> 2u][i & 3u]; }");
    }
}

#[cfg(test)]
mod hoist_tests {
    #[test]
    fn the_wgsl_form_loads_four_iterations_of_a_phase_loop_first() {
        let k = super::tests::kernel(
            "fn tree_sum(x: &[f32], partial: &mut [f32]) {
                    let tile = shared::<f32, 256>();
                    let l = local_id().x;
                    let stride = num_workgroups().x * workgroup_size().x;
                    let mut i = global_id().x;
                    let mut v = 0.0f32;
                    while i < x.len() { v += x[i]; i += stride; }
                    tile[l] = v;
                    barrier();
                    if l == 0 { partial[workgroup_id().x] = tile[0] + tile[1]; }
                }",
        );
        let src = crate::wgsl::emit(&k, false);
        let at = |s: &str| src.find(s).unwrap_or_else(|| panic!("no `{s}` in\n{src}"));
        // In range: three strides past `i` below `x.len()` (END here),
        // with no wrap.
        let guard = at(
            "if (!((v_stride_2) <= 1431655765u && v_i_3 < (n_x) && 3u * (v_stride_2) < (n_x) - v_i_3)) { break; }",
        );
        let loads = at("let ug_h3_x = p_x[(v_i_3 + 3u * (v_stride_2))];");
        // The adds in order, each on its own loaded value, `i` stepped
        // between them; then the loop itself for the rest.
        let adds: Vec<usize> = (0..4)
            .map(|k| at(&format!("v_v_4 = (v_v_4 + ug_h{k}_x);")))
            .collect();
        assert!(guard < loads && loads < adds[0]);
        assert!(adds.windows(2).all(|w| w[0] < w[1]));
        assert!(at("ug_ld_x(v_i_3,") > adds[3]);
    }
}

#[cfg(test)]
mod hoist_subword_tests {
    #[test]
    fn the_wgsl_form_hoists_no_u8_or_half_array() {
        // `where_`'s shape: a u8 mask beside f32 values. The mask's
        // elements are bytes of a word, so only a and b are hoisted.
        let k = super::tests::kernel(
            "fn select(m: &[u8], a: &[f32], b: &[f32], out: &mut [f32]) {
                let stride = num_workgroups().x * workgroup_size().x;
                let mut i = global_id().x;
                while i < out.len() {
                    let x = a[i];
                    let y = b[i];
                    if m[i] != 0u32 { out[i] = x; } else { out[i] = y; }
                    i += stride;
                }
            }",
        );
        let src = crate::wgsl::emit(&k, false);
        assert!(src.contains("let ug_h1_a = "), "{src}");
        assert!(
            !src.contains("ug_h1_m"),
            "the mask hoisted as words:\n{src}"
        );
        let halves = super::tests::kernel(
            "fn widen(x: &[f16], y: &mut [f32]) {
                let stride = num_workgroups().x * workgroup_size().x;
                let mut i = global_id().x;
                while i < y.len() { y[i] = x[i] as f32; i += stride; }
            }",
        );
        let src = crate::wgsl::emit(&halves, false);
        assert!(!src.contains("ug_h1_x"), "f16 hoisted as words:\n{src}");
    }
}

#[cfg(test)]
mod wgsl_index_only_tests {
    #[test]
    fn the_wgsl_form_leaves_a_loop_that_uses_i_as_a_value_unwidened() {
        let k = super::tests::kernel(
            "fn numbered(x: &[f32], y: &mut [f32], z: &mut [u32]) {
                    let stride = num_workgroups().x * workgroup_size().x;
                    let mut i = global_id().x;
                    while i < y.len() { y[i] = x[i]; z[i] = i as u32; i += stride; }
                }",
        );
        // The CUDA form widens it; the WGSL form does not.
        assert!(crate::widen::plan(&k).is_some());
        assert!(crate::cuda::emit(&k).contains("ug_vec<unsigned int, 4u>"));
        let wgsl = crate::wgsl::emit(&k, false);
        assert!(!wgsl.contains("vec4") && !wgsl.contains("ug_vn"), "{wgsl}");
    }
}
