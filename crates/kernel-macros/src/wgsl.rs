//! The WGSL emitter (the vulkan backend). Argument i is
//! `@group(0) @binding(i)`; the arrays' lengths follow as u32 uniforms
//! (a buffer is padded, so `arrayLength` is not the array's length).
//! Integer arithmetic wraps in WGSL already; division, remainder, shifts,
//! float-to-integer casts and float min/max use helpers with the
//! language's definitions.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cuda::{int_max_bits, int_min_bits};
use crate::ir::*;

fn ty(t: Ty) -> &'static str {
    match t {
        Ty::F32 => "f32",
        Ty::F64 => "f64",
        Ty::I32 => "i32",
        Ty::U32 | Ty::Usize => "u32",
        Ty::I64 => "i64",
        Ty::U64 => "u64",
        Ty::Bool => "bool",
        // Two to a 32-bit word: WGSL has no 16-bit storage without
        // extensions (docs/kernels.md).
        Ty::F16 | Ty::Bf16 => "u32",
        // Four to a word, as 16-bit floats are two.
        Ty::U8 => "u32",
    }
}

/// `fma` in f32 rounded once where the adapter's `fma` rounds twice
/// (lavapipe): the product is exact in f64 (24 + 24 bits), Fast2Sum gives
/// the sum's rounding error exactly, and rounding the f64 sum to odd
/// before the one rounding to f32 makes that rounding the correct one
/// (53 bits >= 24 + 2). The larger operand is picked with `select` and
/// the sum taken from `p + z`, not from it: a driver free to simplify
/// float algebra (Mesa's NIR folds `(a + b) - a` into `b`) would
/// otherwise make the error 0. Needs shader-f64 and shader-int64.
const FMA_F32_EMULATED: &str = r#"fn ug_fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let p = f64(a) * f64(b);
    let z = f64(c);
    let s = p + z;
    var bits = bitcast<u64>(s);
    if ((bits & 0x7ff0000000000000lu) == 0x7ff0000000000000lu) { return f32(s); }
    let first = abs(p) >= abs(z);
    let big = select(z, p, first);
    let small = select(p, z, first);
    let e = small - (s - big);
    if (e != 0.0lf && (bits & 1lu) == 0lu) {
        if ((e > 0.0lf) == (s > 0.0lf)) { bits = bits + 1lu; } else { bits = bits - 1lu; }
    }
    return f32(bitcast<f64>(bits));
}
"#;

/// Iterations a hoisted loop runs at a time (`Emit::hoisted`).
const HOIST: u32 = 4;

struct Emit<'k> {
    k: &'k Kernel,
    /// f32 `fma` through [`FMA_F32_EMULATED`] rather than WGSL's `fma`.
    emulate_fma: bool,
    /// Arrays some atomic uses: declared `atomic<T>`, so every access to
    /// them goes through atomicLoad/atomicStore/atomicOP.
    atomics: std::collections::BTreeSet<Mem>,
    /// Access sites indexed without a check (inbounds.rs proved them).
    proven: std::collections::BTreeSet<u32>,
    /// Per `barrier()` in walking order: whether it needs `storageBarrier`
    /// (barrier_scope.rs); `next_barrier` counts them.
    storage_barriers: Vec<bool>,
    next_barrier: usize,
    helpers: BTreeMap<String, String>,
    out: String,
    /// Arrays the widened grid-stride loop (widen.rs) binds as vectors,
    /// with their lanes: every other access takes one lane of a vector.
    wide: BTreeMap<usize, u32>,
    /// Inside one lane of the widened loop: (its `i`, the lane); accesses
    /// at `i` of widened arrays go to the vectors loaded for the lanes.
    lane: Option<(String, u32)>,
    /// Inside a hoisted iteration (`hoisted`): the loop's `i` and, per
    /// array read at `i`, the variable its value was loaded into.
    hoist: Option<(String, BTreeMap<usize, String>)>,
}

/// The sites the WGSL form indexes without a check: the proven ones, but
/// parameter arrays only where every parameter access is proven. NVIDIA's
/// Vulkan compiler ran the grid-stride saxpy with `y` direct and `x`
/// checked at 2150 GB/s, every access checked at 2490 and every access
/// direct at 2530 (an H100, 2026-11-27): a mix is the slowest.
fn wgsl_proven(k: &Kernel) -> std::collections::BTreeSet<u32> {
    let mut proven = crate::inbounds::proven(k);
    let mut global = Vec::new();
    visit_exprs(&k.body, &mut |e| {
        if let ExprKind::Load(_, _, site) = e.kind {
            global.push(site);
        }
    });
    fn stores(stmts: &[Stmt], out: &mut Vec<u32>) {
        for s in stmts {
            match s {
                Stmt::Store { site, .. } => out.push(*site),
                Stmt::Block(b) | Stmt::Loop(b) => stores(b, out),
                Stmt::If { then, els, .. } => {
                    stores(then, out);
                    stores(els, out);
                }
                Stmt::For { body, .. } | Stmt::While { body, .. } => stores(body, out),
                _ => {}
            }
        }
    }
    stores(&k.body, &mut global);
    if global.iter().any(|s| !proven.contains(s)) {
        proven.retain(|s| !global.contains(s));
    }
    proven
}

/// Whether the widened loop's iteration names its `i` only as the index
/// of widened arrays, so that its lanes need no `i` of their own. The
/// WGSL form widens only such loops: on an H200's Vulkan driver the
/// kernel tests' `gs_axpy`, whose lanes used `i` as a value (a
/// neighbour's index, a stored number), never finished, where saxpy-like
/// loops ran and checked out (not diagnosed for want of device time; the
/// CUDA form widens both).
fn index_only(w: &crate::widen::Widened) -> bool {
    let var = w.loop_.var.as_str();
    let is_i = |e: &Expr| matches!(&e.kind, ExprKind::Var(n) if n == var);
    let wide = w.arrays();
    let (mut named, mut as_index) = (0usize, 0usize);
    visit_exprs(w.loop_.body, &mut |e| {
        if is_i(e) {
            named += 1;
        }
        if let ExprKind::Load(a, index, _) = &e.kind
            && is_i(index)
            && wide.contains(a)
        {
            as_index += 1;
        }
    });
    crate::stride::stores(w.loop_.body, &mut |a, index| {
        if is_i(index) && wide.contains(&a) {
            as_index += 1;
        }
    });
    named == as_index
}

/// The WGSL form; with `emulate_fma`, f32 `fma` rounds once on an adapter
/// whose own `fma` rounds twice (chosen when the kernel is built).
pub fn emit(k: &Kernel, emulate_fma: bool) -> String {
    let mut e = Emit {
        k,
        emulate_fma,
        atomics: k.atomics(),
        proven: wgsl_proven(k),
        storage_barriers: crate::barrier_scope::storage_barriers(k),
        next_barrier: 0,
        helpers: BTreeMap::new(),
        out: String::new(),
        wide: BTreeMap::new(),
        lane: None,
        hoist: None,
    };
    let widened = crate::widen::plan(k).filter(|w| index_only(w) && w.one_width(k));
    if let Some(w) = &widened {
        e.wide = w.arrays().into_iter().map(|a| (a, w.lanes)).collect();
    }
    let mut funcs = String::new();
    for f in &k.funcs {
        e.block(&f.body, 1);
        let r = e.expr(&f.result);
        e.line(1, &format!("return {r};"));
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(n, t)| format!("{n}: {}", ty(*t)))
            .collect();
        let _ = write!(
            funcs,
            "fn {}({}) -> {} {{\n{}}}\n",
            f.name,
            params.join(", "),
            ty(f.ret),
            std::mem::take(&mut e.out)
        );
    }
    match (&widened, k.body.split_last()) {
        (Some(w), Some((grid_stride, prefix))) => {
            e.block(prefix, 1);
            e.widened(w);
            e.stmt(grid_stride, 1);
        }
        _ => {
            let top: Vec<&Stmt> = k.body.iter().collect();
            // Only arrays of whole 32- or 64-bit elements: a u8 or f16/bf16
            // element is part of a word (its load picks it out), and
            // hoisting read the whole word as the element (`where_` on
            // vulkan took a word of four mask bytes as one).
            let hoisted = crate::stride::phase_loop(k, &top)
                .map(|mut p| {
                    p.sliced
                        .retain(|&a| !matches!(elem_of(&k.params[a]), Ty::U8 | Ty::F16 | Ty::Bf16));
                    p
                })
                .filter(|p| !p.sliced.is_empty());
            for (at, s) in k.body.iter().enumerate() {
                if let Some(p) = hoisted.as_ref().filter(|p| p.at == at) {
                    e.hoisted(p, s);
                }
                e.stmt(s, 1);
            }
        }
    }
    let mut s = format!("// Generated by #[unigpu::kernel] from `fn {}`.\n", k.name);
    let mut binding = 0;
    let atomics = e.atomics.clone();
    for (i, p) in k.params.iter().enumerate() {
        let decl = match p.kind {
            ParamKind::Array {
                elem,
                writable: false,
            } => format!(
                "var<storage, read> p_{}: array<{}>",
                p.name,
                e.unit(i, elem)
            ),
            ParamKind::Array {
                elem,
                writable: true,
            } => {
                // A 16- or 8-bit store changes part of a word with a CAS
                // loop.
                let t = if atomics.contains(&Mem::Global(i)) || elem.is_narrow() {
                    format!("atomic<{}>", ty(elem))
                } else {
                    e.unit(i, elem)
                };
                format!("var<storage, read_write> p_{}: array<{t}>", p.name)
            }
            // bool is not host-shareable: it arrives as a u32.
            ParamKind::Scalar(Ty::Bool) => format!("var<uniform> p_{}: u32", p.name),
            ParamKind::Scalar(t) => format!("var<uniform> p_{}: {}", p.name, ty(t)),
        };
        let _ = writeln!(s, "@group(0) @binding({binding}) {decl};");
        binding += 1;
    }
    for (_, p) in k.arrays() {
        let _ = writeln!(
            s,
            "@group(0) @binding({binding}) var<uniform> n_{}: u32;",
            p.name
        );
        binding += 1;
    }
    // The stream's fault word and this kernel's code (its id << 20),
    // appended by the launch after the lengths.
    let _ = writeln!(
        s,
        "@group(0) @binding({binding}) var<storage, read_write> ug_status: array<atomic<u32>>;"
    );
    let _ = writeln!(
        s,
        "@group(0) @binding({}) var<uniform> ug_kernel: u32;",
        binding + 1
    );
    // The first out-of-bounds access recorded wins; the weak exchange may
    // fail spuriously, so it is retried until the word holds a code.
    s.push_str("fn ug_fault(site: u32) { loop { let r = atomicCompareExchangeWeak(&ug_status[0], 0u, ug_kernel | site); if (r.exchanged || r.old_value != 0u) { break; } } }\n");
    // Workgroup memory starts at zero in WGSL.
    for (i, sh) in k.shared.iter().enumerate() {
        let t = if atomics.contains(&Mem::Shared(i)) {
            format!("atomic<{}>", ty(sh.elem))
        } else {
            ty(sh.elem).to_string()
        };
        let _ = writeln!(s, "var<workgroup> {}: array<{t}, {}>;", sh.name, sh.len);
    }
    for h in e.helpers.values() {
        s.push_str(h);
    }
    s.push_str(&funcs);
    let [x, y, z] = k.workgroup;
    // Only a kernel that uses them names the subgroup built-ins (they
    // need the adapter's subgroup operations).
    let subgroup = if k.uses_subgroups() {
        ", @builtin(subgroup_size) ug_subgroup_size: u32, @builtin(subgroup_id) ug_subgroup_id: u32, @builtin(subgroup_invocation_id) ug_subgroup_lane: u32"
    } else {
        ""
    };
    let _ = write!(
        s,
        "@compute @workgroup_size({x}, {y}, {z})\nfn {}(@builtin(global_invocation_id) ug_global: vec3<u32>, @builtin(local_invocation_id) ug_local: vec3<u32>, @builtin(workgroup_id) ug_group: vec3<u32>, @builtin(num_workgroups) ug_groups: vec3<u32>{subgroup}) {{\n{}}}\n",
        k.name, e.out
    );
    s
}

impl Emit<'_> {
    /// A parameter array's element as bound: a vector for a widened one.
    fn unit(&self, a: usize, elem: Ty) -> String {
        match self.wide.get(&a) {
            Some(lanes) => format!("vec{lanes}<{}>", ty(elem)),
            None => ty(elem).to_string(),
        }
    }

    /// Parameter array `a`'s element `i` (an identifier or a literal) as a
    /// reference: a lane of a vector for a widened array.
    fn at(&self, a: usize, i: &str) -> String {
        let name = &self.k.params[a].name;
        match self.wide.get(&a) {
            Some(&lanes) => format!(
                "p_{name}[{i} >> {}u][{i} & {}u]",
                lanes.trailing_zeros(),
                lanes - 1
            ),
            None => format!("p_{name}[{i}]"),
        }
    }

    /// Inside a lane of the widened loop, the vector lane that an access
    /// of array `a` at `index` is.
    fn lane_of(&self, a: usize, index: &Expr) -> Option<String> {
        let (var, lane) = self.lane.as_ref()?;
        let at_var = matches!(&index.kind, ExprKind::Var(n) if n == var);
        (at_var && self.wide.contains_key(&a))
            .then(|| format!("ug_w_{}[{lane}]", self.k.params[a].name))
    }

    /// The widened part of a grid-stride loop (widen.rs), before the loop
    /// itself, which then starts where this part stopped. The lanes are
    /// written out one by one (constant indices into the vectors). A
    /// binding starts at its buffer's start, so vectors are aligned; the
    /// buffers are padded to 16 bytes (the vulkan backend's buffer.rs), so
    /// a vector binding covers every element.
    fn widened(&mut self, w: &crate::widen::Widened) {
        let (var, lanes) = (w.loop_.var.clone(), w.lanes);
        let (end, step) = (self.expr(w.loop_.end), self.expr(w.step));
        let (arrays, names): (Vec<usize>, Vec<String>) = w.named(self.k).into_iter().unzip();
        self.line(1, "{");
        self.line(2, &w.comment());
        self.line(2, &format!("var ug_vn: u32 = {end};"));
        for n in &names {
            self.line(2, &format!("ug_vn = min(ug_vn, n_{n});"));
        }
        self.line(2, &format!("ug_vn = ug_vn / {lanes}u;"));
        self.line(2, &format!("var ug_v: u32 = {var};"));
        self.line(2, "loop {");
        self.line(3, "if (!(ug_v < ug_vn)) { break; }");
        for (&a, n) in arrays.iter().zip(&names) {
            if w.loads.contains(&a) {
                self.line(3, &format!("var ug_w_{n} = p_{n}[ug_v];"));
            } else {
                let t = self.unit(a, elem_of(&self.k.params[a]));
                self.line(3, &format!("var ug_w_{n}: {t};"));
            }
        }
        for lane in 0..lanes {
            // No `i` in the lane: the iteration names it only as the
            // index of widened arrays (`index_only`).
            self.line(3, "{");
            self.lane = Some((var.clone(), lane));
            self.block(w.loop_.body, 4);
            self.lane = None;
            self.line(3, "}");
        }
        for &a in &w.stores {
            let n = &self.k.params[a].name;
            self.line(3, &format!("p_{n}[ug_v] = ug_w_{n};"));
        }
        self.line(3, &format!("ug_v = ug_v + {step};"));
        self.line(2, "}");
        self.line(2, &format!("{var} = ug_vn * {lanes}u + {var};"));
        self.line(1, "}");
    }

    /// Iterations of a grid-stride loop in a phase (stride.rs's
    /// `PhaseLoop`) run [`HOIST`] at a time while all of them are in range,
    /// before the loop itself, with the read-only arrays' elements at `i`
    /// loaded for all of them first. Each iteration still runs in order with
    /// the same values (the arrays are read-only, nothing writes them during
    /// the launch), so an accumulator adds in the same order; what changes
    /// is that the loads are in flight together. NVIDIA's Vulkan compiler
    /// waited for each load of the tree sum's `v += x[i]` before the next
    /// (0.70x the built-in sum on an H200), where nvcc unrolls the loop.
    fn hoisted(&mut self, p: &crate::stride::PhaseLoop, stmt: &Stmt) {
        let Stmt::While { body, .. } = stmt else {
            return;
        };
        let Some(step) = body.last() else { return };
        let Stmt::Assign { value, .. } = step else {
            return;
        };
        let ExprKind::Bin(BinOp::Add, l, r) = &value.kind else {
            return;
        };
        let var = p.var.clone();
        let stride = if matches!(&l.kind, ExprKind::Var(n) if *n == var) {
            r
        } else {
            l
        };
        let (end, stride) = (self.expr(p.end), self.expr(stride));
        let far = HOIST - 1;
        // `far` strides past `i` below END and every hoisted array's
        // length, without wrapping: `i < n && far·S < n - i`.
        let mut conds = vec![format!("({stride}) <= {}u", u32::MAX / far)];
        let mut lens: Vec<String> = vec![end];
        for &a in &p.sliced {
            let n = format!("n_{}", self.k.params[a].name);
            if !lens.contains(&n) {
                lens.push(n);
            }
        }
        for n in &lens {
            conds.push(format!(
                "{var} < ({n}) && {far}u * ({stride}) < ({n}) - {var}"
            ));
        }
        self.line(1, "loop {");
        self.line(
            2,
            &format!("// {HOIST} iterations, their loads first (wgsl.rs, `hoisted`)."),
        );
        self.line(2, &format!("if (!({})) {{ break; }}", conds.join(" && ")));
        let mut names = BTreeMap::new();
        for k in 0..HOIST {
            for &a in &p.sliced {
                let n = &self.k.params[a].name;
                let at = if k == 0 {
                    var.clone()
                } else {
                    format!("{var} + {k}u * ({stride})")
                };
                let element = self.at(a, &format!("({at})"));
                self.line(2, &format!("let ug_h{k}_{n} = {element};"));
            }
        }
        for k in 0..HOIST {
            for &a in &p.sliced {
                names.insert(a, format!("ug_h{k}_{}", self.k.params[a].name));
            }
            self.line(2, "{");
            self.hoist = Some((var.clone(), names.clone()));
            self.block(p.body, 3);
            self.hoist = None;
            self.line(2, "}");
            self.stmt(step, 2);
        }
        self.line(1, "}");
    }

    /// An array's WGSL name and length.
    fn mem(&self, m: Mem) -> (String, String) {
        match m {
            Mem::Global(a) => {
                let n = &self.k.params[a].name;
                (format!("p_{n}"), format!("n_{n}"))
            }
            Mem::Shared(a) => {
                let s = &self.k.shared[a];
                (s.name.clone(), s.len.u32_expr())
            }
        }
    }

    fn helper(&mut self, name: String, body: impl FnOnce() -> String) -> String {
        if !self.helpers.contains_key(&name) {
            let text = body();
            self.helpers.insert(name.clone(), text);
        }
        name
    }

    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) {
        for s in stmts {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, d: usize) {
        match s {
            Stmt::Let {
                name,
                ty: t,
                init,
                mutable,
            } => {
                let v = self.expr(init);
                let kw = if *mutable { "var" } else { "let" };
                self.line(d, &format!("{kw} {name}: {} = {v};", ty(*t)));
            }
            Stmt::Assign { name, value } => {
                let v = self.expr(value);
                self.line(d, &format!("{name} = {v};"));
            }
            Stmt::Store {
                array,
                index,
                value,
                site,
            } => {
                if let Some(lane) = self.lane_of(*array, index) {
                    let v = self.expr(value);
                    self.line(d, &format!("{lane} = {v};"));
                    return;
                }
                let p = &self.k.params[*array];
                let (name, elem) = (p.name.clone(), elem_of(p));
                let atomic = self.atomics.contains(&Mem::Global(*array));
                if elem.is_half() {
                    let st = self.half_store(&name, elem);
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("{st}({i}, {v});"));
                    return;
                }
                if elem == Ty::U8 {
                    let st = self.byte_store(&name);
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("{st}({i}, {v}, {site}u);"));
                    return;
                }
                if self.proven.contains(site) && !atomic && !self.wide.contains_key(array) {
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("p_{name}[{i}] = {v};"));
                    return;
                }
                let element = self.at(*array, "i");
                if self.proven.contains(site) && !atomic {
                    // A widened array's element through a function: its
                    // index is named twice.
                    let put = self.helper(format!("ug_put_{name}"), || {
                        format!(
                            "fn ug_put_{name}(i: u32, v: {t}) {{ {element} = v; }}\n",
                            t = ty(elem)
                        )
                    });
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("{put}({i}, {v});"));
                    return;
                }
                let st = self.helper(format!("ug_st_{name}"), || {
                    let write = if atomic {
                        format!("atomicStore(&{element}, v)")
                    } else {
                        format!("{element} = v")
                    };
                    format!(
                        "fn ug_st_{name}(i: u32, v: {t}, site: u32) {{ if (i < n_{name}) {{ {write}; }} else {{ ug_fault(site); }} }}\n",
                        t = ty(elem)
                    )
                });
                let (i, v) = (self.expr(index), self.expr(value));
                self.line(d, &format!("{st}({i}, {v}, {site}u);"));
            }
            Stmt::SharedStore {
                array,
                index,
                value,
                site,
            } => {
                let sh = &self.k.shared[*array];
                let (name, len, elem) = (sh.name.clone(), sh.len.u32_expr(), sh.elem);
                let atomic = self.atomics.contains(&Mem::Shared(*array));
                if self.proven.contains(site) && !atomic {
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("{name}[{i}] = {v};"));
                    return;
                }
                let st = self.helper(format!("ug_st_{name}"), || {
                    let write = if atomic {
                        format!("atomicStore(&{name}[i], v)")
                    } else {
                        format!("{name}[i] = v")
                    };
                    format!(
                        "fn ug_st_{name}(i: u32, v: {t}, site: u32) {{ if (i < {len}) {{ {write}; }} else {{ ug_fault(site); }} }}\n",
                        t = ty(elem)
                    )
                });
                let (i, v) = (self.expr(index), self.expr(value));
                self.line(d, &format!("{st}({i}, {v}, {site}u);"));
            }
            // storageBarrier too where a global write can come before it:
            // CUDA's __syncthreads() orders global memory within the block,
            // and the language promises the same (barrier_scope.rs).
            Stmt::Barrier(_) => {
                let storage = self.storage_barriers.get(self.next_barrier) != Some(&false);
                self.next_barrier += 1;
                if storage {
                    self.line(d, "storageBarrier(); workgroupBarrier();");
                } else {
                    self.line(d, "workgroupBarrier();");
                }
            }
            Stmt::Eval(e) => {
                let v = self.expr(e);
                self.line(d, &format!("_ = {v};"));
            }
            Stmt::Block(b) => {
                self.line(d, "{");
                self.block(b, d + 1);
                self.line(d, "}");
            }
            Stmt::If { cond, then, els } => {
                let c = self.expr(cond);
                self.line(d, &format!("if ({c}) {{"));
                self.block(then, d + 1);
                if els.is_empty() {
                    self.line(d, "}");
                } else {
                    self.line(d, "} else {");
                    self.block(els, d + 1);
                    self.line(d, "}");
                }
            }
            Stmt::For {
                name,
                ty: t,
                start,
                end,
                body,
            } => {
                let (a, b) = (self.expr(start), self.expr(end));
                let c = ty(*t);
                let one = lit(Lit::Int(1), *t);
                self.line(d, "{");
                self.line(d + 1, &format!("let {name}_end: {c} = {b};"));
                self.line(d + 1, &format!("for (var {name}: {c} = {a}; {name} < {name}_end; {name} = {name} + {one}) {{"));
                self.block(body, d + 2);
                self.line(d + 1, "}");
                self.line(d, "}");
            }
            Stmt::While { cond, body } => {
                self.line(d, "loop {");
                let c = self.expr(cond);
                self.line(d + 1, &format!("if (!({c})) {{ break; }}"));
                self.block(body, d + 1);
                self.line(d, "}");
            }
            Stmt::Loop(body) => {
                self.line(d, "loop {");
                self.block(body, d + 1);
                self.line(d, "}");
            }
            Stmt::Break(_) => self.line(d, "break;"),
            Stmt::Continue(_) => self.line(d, "continue;"),
            Stmt::Return(_) => self.line(d, "return;"),
            Stmt::ReturnValue(v) => {
                let v = self.expr(v);
                self.line(d, &format!("return {v};"));
            }
        }
    }

    fn expr(&mut self, e: &Expr) -> String {
        match &e.kind {
            ExprKind::Lit(Lit::Bool(b)) => b.to_string(),
            // A literal goes through an identity function: WGSL evaluates an
            // expression of literals when the shader is created, and refuses
            // the ones whose value the language defines but WGSL's constant
            // rules do not (`sqrt(-10.0)`, `3.0 / 0.0`, a shift past the
            // width, an i32 overflow). A call is never a constant
            // expression; drivers inline it.
            ExprKind::Lit(l) => {
                let t = ty(e.ty);
                let f = self.helper(format!("ug_v_{t}"), || {
                    format!("fn ug_v_{t}(x: {t}) -> {t} {{ return x; }}\n")
                });
                format!("{f}({})", lit(*l, e.ty))
            }
            ExprKind::Var(n) => n.clone(),
            ExprKind::Scalar(i) if e.ty == Ty::Bool => {
                format!("(p_{} != 0u)", self.k.params[*i].name)
            }
            ExprKind::Scalar(i) => format!("p_{}", self.k.params[*i].name),
            ExprKind::Len(i) => format!("n_{}", self.k.params[*i].name),
            ExprKind::Atomic {
                op,
                mem,
                index,
                value,
                current,
                site,
            } => {
                let (arr, len) = self.mem(*mem);
                let t = ty(e.ty);
                let lower = op.name().to_lowercase();
                let f = format!("ug_atomic_{lower}_{arr}");
                let f = self.helper(f.clone(), || match op {
                    // WGSL has only the weak form, which may fail
                    // spuriously: retry until it succeeds or sees
                    // another value, as CUDA's atomicCAS does.
                    AtomicOp::CompareExchange => format!(
                        "fn {f}(i: u32, cur: {t}, v: {t}, site: u32) -> {t} {{ if (i < {len}) {{ loop {{ let r = atomicCompareExchangeWeak(&{arr}[i], cur, v); if (r.exchanged || r.old_value != cur) {{ return r.old_value; }} }} }} ug_fault(site); return {t}(); }}\n"
                    ),
                    _ => {
                        let w = match op {
                            AtomicOp::Add => "atomicAdd",
                            AtomicOp::Sub => "atomicSub",
                            AtomicOp::Min => "atomicMin",
                            AtomicOp::Max => "atomicMax",
                            AtomicOp::And => "atomicAnd",
                            AtomicOp::Or => "atomicOr",
                            AtomicOp::Xor => "atomicXor",
                            _ => "atomicExchange",
                        };
                        format!(
                            "fn {f}(i: u32, v: {t}, site: u32) -> {t} {{ if (i < {len}) {{ return {w}(&{arr}[i], v); }} ug_fault(site); return {t}(); }}\n"
                        )
                    }
                });
                let i = self.expr(index);
                let c = match current {
                    Some(c) => format!("{}, ", self.expr(c)),
                    None => String::new(),
                };
                let v = self.expr(value);
                format!("{f}({i}, {c}{v}, {site}u)")
            }
            ExprKind::SharedLoad(a, index, site) => {
                let sh = &self.k.shared[*a];
                let (name, len, elem) = (sh.name.clone(), sh.len.u32_expr(), sh.elem);
                let atomic = self.atomics.contains(&Mem::Shared(*a));
                if self.proven.contains(site) && !atomic {
                    return format!("{name}[{}]", self.expr(index));
                }
                let ld = self.helper(format!("ug_ld_{name}"), || {
                    let read = if atomic {
                        format!("atomicLoad(&{name}[i])")
                    } else {
                        format!("{name}[i]")
                    };
                    format!(
                        "fn ug_ld_{name}(i: u32, site: u32) -> {t} {{ if (i < {len}) {{ return {read}; }} ug_fault(site); return {t}(); }}\n",
                        t = ty(elem)
                    )
                });
                let i = self.expr(index);
                format!("{ld}({i}, {site}u)")
            }
            ExprKind::Load(a, index, site) => {
                if let Some(lane) = self.lane_of(*a, index) {
                    return lane;
                }
                if let Some((var, names)) = &self.hoist
                    && matches!(&index.kind, ExprKind::Var(n) if n == var)
                    && let Some(value) = names.get(a)
                {
                    return value.clone();
                }
                let p = &self.k.params[*a];
                let (name, elem) = (p.name.clone(), elem_of(p));
                let atomic = self.atomics.contains(&Mem::Global(*a));
                if elem.is_half() {
                    let writable = matches!(p.kind, ParamKind::Array { writable: true, .. });
                    let ld = self.half_load(&name, elem, writable);
                    let i = self.expr(index);
                    return format!("{ld}({i})");
                }
                if elem == Ty::U8 {
                    let writable = matches!(p.kind, ParamKind::Array { writable: true, .. });
                    let ld = self.byte_load(&name, writable);
                    let i = self.expr(index);
                    return format!("{ld}({i}, {site}u)");
                }
                if self.proven.contains(site) && !atomic && !self.wide.contains_key(a) {
                    return format!("p_{name}[{}]", self.expr(index));
                }
                let element = self.at(*a, "i");
                if self.proven.contains(site) && !atomic {
                    let get = self.helper(format!("ug_get_{name}"), || {
                        format!(
                            "fn ug_get_{name}(i: u32) -> {t} {{ return {element}; }}\n",
                            t = ty(elem)
                        )
                    });
                    return format!("{get}({})", self.expr(index));
                }
                let ld = self.helper(format!("ug_ld_{name}"), || {
                    let read = if atomic {
                        format!("atomicLoad(&{element})")
                    } else {
                        element.clone()
                    };
                    format!(
                        "fn ug_ld_{name}(i: u32, site: u32) -> {t} {{ if (i < n_{name}) {{ return {read}; }} ug_fault(site); return {t}(); }}\n",
                        t = ty(elem)
                    )
                });
                let i = self.expr(index);
                format!("{ld}({i}, {site}u)")
            }
            ExprKind::Bin(op, l, r) => self.binary(*op, l, r),
            ExprKind::Neg(v) => format!("(-{})", self.expr(v)),
            ExprKind::Not(v) => {
                let x = self.expr(v);
                if v.ty == Ty::Bool {
                    format!("(!{x})")
                } else {
                    format!("(~{x})")
                }
            }
            ExprKind::Cast(v) => self.cast(v, e.ty),
            ExprKind::Id(b, axis) => {
                let c = ["x", "y", "z"][*axis];
                match b {
                    Builtin::SubgroupSize => "ug_subgroup_size".into(),
                    Builtin::SubgroupId => "ug_subgroup_id".into(),
                    Builtin::SubgroupLane => "ug_subgroup_lane".into(),
                    Builtin::Global => format!("ug_global.{c}"),
                    Builtin::Local => format!("ug_local.{c}"),
                    Builtin::Group => format!("ug_group.{c}"),
                    Builtin::Size => format!("{}u", self.k.workgroup[*axis]),
                    Builtin::Groups => format!("ug_groups.{c}"),
                }
            }
            ExprKind::Math(f, args) => self.math(*f, args, e.ty),
            ExprKind::Call(f, args) => {
                let a: Vec<String> = args.iter().map(|x| self.expr(x)).collect();
                format!("{}({})", self.k.funcs[*f].name, a.join(", "))
            }
        }
    }

    fn binary(&mut self, op: BinOp, l: &Expr, r: &Expr) -> String {
        use BinOp::*;
        let t = l.ty;
        let (a, b) = (self.expr(l), self.expr(r));
        match op {
            Div | Rem if t.is_int() => {
                let name = format!("ug_{}_{}", if op == Div { "div" } else { "rem" }, t.tag());
                let c = ty(t);
                let zero = lit(Lit::Int(0), t);
                let body = match (op, t.is_signed()) {
                    (Div, true) => format!(
                        "if (b == {zero}) {{ return a; }} if (b == -{one}) {{ return -a; }} return a / b;",
                        one = lit(Lit::Int(1), t)
                    ),
                    (Div, false) => format!("if (b == {zero}) {{ return a; }} return a / b;"),
                    (_, true) => format!(
                        "if (b == {zero} || b == -{one}) {{ return {zero}; }} return a % b;",
                        one = lit(Lit::Int(1), t)
                    ),
                    (_, false) => format!("if (b == {zero}) {{ return {zero}; }} return a % b;"),
                };
                let f = self.helper(name.clone(), || {
                    format!("fn {name}(a: {c}, b: {c}) -> {c} {{ {body} }}\n")
                });
                format!("{f}({a}, {b})")
            }
            Rem if t.is_float() => {
                let f = self.fmod_helper(t);
                format!("{f}({a}, {b})")
            }
            Shl | Shr => {
                let mask = t.bits() - 1;
                format!("({a} {} (u32({b}) & {mask}u))", crate::lower::op_text(op))
            }
            BitXor if t == Ty::Bool => format!("({a} != {b})"),
            // Rust's `!=` is true when either side is NaN; SPIR-V's
            // ordered compare (what `!=` may become) is false.
            Ne if t.is_float() => format!("(!({a} == {b}))"),
            _ => format!("({a} {} {b})", crate::lower::op_text(op)),
        }
    }

    fn cast(&mut self, v: &Expr, to: Ty) -> String {
        let x = self.expr(v);
        let from = v.ty;
        if from.is_float() && to.is_int() {
            let name = format!("ug_cvt_{}_{}", from.tag(), to.tag());
            let (c, f) = (ty(to), ty(from));
            let b = to.bits();
            let (lo, hi) = if to.is_signed() {
                (-((1u128 << (b - 1)) as f64), (1u128 << (b - 1)) as f64)
            } else {
                (0.0, (1u128 << b) as f64)
            };
            let fl = |v: f64| {
                if from == Ty::F32 {
                    lit(Lit::F32(v as f32), from)
                } else {
                    lit(Lit::F64(v), from)
                }
            };
            let (lo, hi) = (fl(lo), fl(hi));
            let lo_bits = lit(Lit::Int(int_min_bits(to)), to);
            let hi_bits = lit(Lit::Int(int_max_bits(to)), to);
            let nan = is_nan("x", from);
            let f = self.helper(name.clone(), || {
                format!(
                    "fn {name}(x: {f}) -> {c} {{ if ({nan}) {{ return {c}(); }} if (x <= {lo}) {{ return {lo_bits}; }} if (x >= {hi}) {{ return {hi_bits}; }} return {c}(x); }}\n"
                )
            });
            format!("{f}({x})")
        } else if from.is_int()
            && to.is_int()
            && from.bits() < to.bits()
            && from.is_signed() != to.is_signed()
        {
            // Widen within the source's signedness first (sign- or
            // zero-extends, as Rust's `as`), then reinterpret: naga
            // extends by the target's signedness, so `u64(i32)` zero- and
            // `i64(u32)` sign-extended.
            let wide = match from {
                Ty::I32 => Ty::I64,
                _ => Ty::U64,
            };
            format!("{}({}({x}))", ty(to), ty(wide))
        } else if from == Ty::F32 && to == Ty::F64 {
            // A subnormal f32 through integer bits: a driver without
            // SPIR-V's DenormPreserve for 32 bits may flush it on the way
            // (NVIDIA's: 1e-40 became 0), and an f64 holds it as a normal
            // number. m × 2^-149 with m's top bit at p = 31 - lz is
            // 1.f × 2^(p - 149): biased exponent 905 - lz.
            let f = self.helper("ug_f32_to_f64".into(), || {
                "fn ug_f32_to_f64(x: f32) -> f64 { let b = bitcast<u32>(x); let m = b & 0x7fffffu; \
                 if ((b & 0x7f800000u) != 0u || m == 0u) { return f64(x); } \
                 let lz = countLeadingZeros(m); \
                 let frac = (u64(m) << (21u + lz)) & 0xffffffffffffflu; \
                 return bitcast<f64>((u64(b >> 31u) << 63u) | (u64(905u - lz) << 52u) | frac); }\n"
                    .into()
            });
            format!("{f}({x})")
        } else {
            format!("{}({x})", ty(to))
        }
    }

    fn math(&mut self, f: Math, args: &[Expr], t: Ty) -> String {
        let a: Vec<String> = args.iter().map(|e| self.expr(e)).collect();
        let c = ty(t);
        match f {
            Math::MulHi => {
                // From 16-bit halves in u32 arithmetic: no shader-int64
                // needed.
                let f = self.helper("ug_mul_hi".into(), || {
                    "fn ug_mul_hi(a: u32, b: u32) -> u32 { let al = a & 0xffffu; let ah = a >> 16u; \
                     let bl = b & 0xffffu; let bh = b >> 16u; let p1 = al * bh; let p2 = ah * bl; \
                     let mid = ((al * bl) >> 16u) + (p1 & 0xffffu) + (p2 & 0xffffu); \
                     return ah * bh + (p1 >> 16u) + (p2 >> 16u) + (mid >> 16u); }\n"
                        .into()
                });
                format!("{f}({}, {})", a[0], a[1])
            }
            Math::ToBits => format!("bitcast<u32>({})", a[0]),
            Math::SubgroupAdd => format!("subgroupAdd({})", a[0]),
            Math::SubgroupMax => format!("subgroupMax({})", a[0]),
            Math::SubgroupMin => format!("subgroupMin({})", a[0]),
            Math::FromBits => format!("bitcast<f32>({})", a[0]),
            Math::Abs if t.is_int() => {
                // A helper, so the argument is printed once.
                let name = format!("ug_abs_{}", t.tag());
                let f = self.helper(name.clone(), || {
                    format!(
                        "fn {name}(a: {c}) -> {c} {{ if (a < {c}()) {{ return -a; }} return a; }}\n"
                    )
                });
                format!("{f}({})", a[0])
            }
            Math::Min | Math::Max | Math::Clamp if t.is_int() => match f {
                Math::Min => format!("min({}, {})", a[0], a[1]),
                Math::Max => format!("max({}, {})", a[0], a[1]),
                _ => format!("min(max({}, {}), {})", a[0], a[1], a[2]),
            },
            Math::Min | Math::Max | Math::Clamp => {
                // IEEE minNum/maxNum, as Rust's and CUDA's: a NaN operand
                // gives the other (WGSL leaves NaN inputs unspecified).
                let mn = self.nan_helper("min", t);
                let mx = self.nan_helper("max", t);
                match f {
                    Math::Min => format!("{mn}({}, {})", a[0], a[1]),
                    Math::Max => format!("{mx}({}, {})", a[0], a[1]),
                    _ => format!("{mn}({mx}({}, {}), {})", a[0], a[1], a[2]),
                }
            }
            Math::Sqrt => format!("sqrt({})", a[0]),
            Math::Rsqrt => format!("inverseSqrt({})", a[0]),
            Math::Abs => format!("abs({})", a[0]),
            Math::Floor => format!("floor({})", a[0]),
            Math::Ceil => format!("ceil({})", a[0]),
            Math::Exp => format!("exp({})", a[0]),
            Math::Exp2 => format!("exp2({})", a[0]),
            Math::Ln => format!("log({})", a[0]),
            Math::Log2 => format!("log2({})", a[0]),
            Math::Sin => format!("sin({})", a[0]),
            Math::Cos => format!("cos({})", a[0]),
            Math::Tan => format!("tan({})", a[0]),
            Math::Tanh => format!("tanh({})", a[0]),
            Math::Fma if t == Ty::F32 && self.emulate_fma => {
                let f = self.helper("ug_fma_f32".into(), || FMA_F32_EMULATED.to_string());
                format!("{f}({}, {}, {})", a[0], a[1], a[2])
            }
            // Fused on this adapter (the kernel is built with the
            // emulation, or refused, where it is not: generated::build).
            Math::Fma => format!("fma({}, {}, {})", a[0], a[1], a[2]),
            Math::Round => {
                // Rust's: half away from zero (WGSL's `round` is to even).
                // `x - trunc(x)` is exact.
                let name = format!("ug_round_{}", t.tag());
                let half = lit_f(0.5, t);
                let f = self.helper(name.clone(), || {
                    format!(
                        "fn {name}(x: {c}) -> {c} {{ let t = trunc(x); if (abs(x - t) >= {half}) {{ return t + sign(x); }} return t; }}\n"
                    )
                });
                format!("{f}({})", a[0])
            }
            Math::Pow => {
                let f = self.pow_helper(t);
                format!("{f}({}, {})", a[0], a[1])
            }
            Math::Powi => {
                let name = format!("ug_powi_{}", t.tag());
                let one = if t == Ty::F32 { "1.0f" } else { "1.0lf" };
                let f = self.helper(name.clone(), || {
                    format!(
                        "fn {name}(x: {c}, n: i32) -> {c} {{ var r: {c} = {one}; var b: {c} = x; var m: u32 = select(u32(n), 0u - u32(n), n < 0i); loop {{ if (m == 0u) {{ break; }} if ((m & 1u) == 1u) {{ r = r * b; }} b = b * b; m = m >> 1u; }} if (n < 0i) {{ return {one} / r; }} return r; }}\n"
                    )
                });
                format!("{f}({}, {})", a[0], a[1])
            }
        }
    }

    /// Rust's float `%` (C's fmod): exact, with the dividend's sign; NaN
    /// for a zero divisor, an infinite dividend or a NaN. WGSL's own `%`
    /// is `x - y * trunc(x / y)`, which rounds. Long division instead:
    /// each step subtracts from r = |x| the largest |y| * 2^k not above
    /// it, so r < 2 * |y| * 2^k and the difference is exact (Sterbenz)
    /// and below |y| * 2^k; the steps are at most the exponents'
    /// difference plus one (about 280 for f32, 2100 for f64), each one
    /// `frexp`, `ldexp` and a subtraction, all exact. (naga's f64 `frexp`
    /// gives an i64 exponent, `ldexp` takes an i32.)
    fn fmod_helper(&mut self, t: Ty) -> String {
        let name = format!("ug_fmod_{}", t.tag());
        let c = ty(t);
        let zero = lit_f(0.0, t);
        let (inf, nan, neg) = specials(t);
        let (xnan, ynan) = (is_nan("x", t), is_nan("y", t));
        let cap = if t == Ty::F64 { 2200 } else { 300 };
        // The exponent of a normal number, and y·2^k for a normal y and a
        // normal result. f64 takes them from the bits: NVIDIA's Vulkan
        // driver lost the device on f64 `frexp`/`ldexp` (an H100,
        // 2026-11-27), where the f32 forms ran exactly.
        let (exp_of, scaled, scaled_less) = if t == Ty::F64 {
            (
                (|v: &str| format!("i32((bitcast<u64>({v}) >> 52u) & 0x7fflu)"))
                    as fn(&str) -> String,
                "bitcast<f64>(bitcast<u64>(ay) + (u64(k) << 52u))",
                "bitcast<f64>(bitcast<u64>(ay) + (u64(k - 1) << 52u))",
            )
        } else {
            (
                (|v: &str| format!("i32(frexp({v}).exp)")) as fn(&str) -> String,
                "ldexp(ay, k)",
                "ldexp(ay, k - 1)",
            )
        };
        let (exp_ay, exp_r) = (exp_of("ay"), exp_of("r"));
        self.helper(name.clone(), || {
            format!(
                "fn {name}(x: {c}, y: {c}) -> {c} {{
    let ax = abs(x);
    let ay = abs(y);
    if ({xnan} || {ynan} || ax == {inf} || ay == {zero}) {{ return {nan}; }}
    if (ax < ay) {{ return x; }}
    var r = ax;
    let ey = {exp_ay};
    // Each step clears r's leading bit: at most the exponent range plus
    // the mantissa's bits. The cap (and the stop on a zero step, where a
    // driver flushes a subnormal) keeps a driver's rounding from ever
    // turning this into an endless loop on the GPU.
    for (var n = 0; n < {cap}; n++) {{
        if (r < ay) {{ break; }}
        let k = {exp_r} - ey;
        var s = {scaled};
        if (s > r) {{ s = {scaled_less}; }}
        if (s == {zero}) {{ break; }}
        r = r - s;
    }}
    if ({neg}) {{ return -r; }}
    return r;
}}
"
            )
        })
    }

    /// C's (and Rust's) `pow`: WGSL's is `exp2(y * log2(x))`, undefined
    /// for x <= 0, so the signs, zeros, infinities and NaNs are decided
    /// here and WGSL's `pow` only sees |x| > 0 finite, y finite, nonzero.
    fn pow_helper(&mut self, t: Ty) -> String {
        let name = format!("ug_pow_{}", t.tag());
        let c = ty(t);
        let (zero, one, half) = (lit_f(0.0, t), lit_f(1.0, t), lit_f(0.5, t));
        // Integers at and above 2^24 (2^53) are even.
        let big = lit_f(
            if t == Ty::F64 {
                9007199254740992.0
            } else {
                16777216.0
            },
            t,
        );
        let (inf, nan, neg) = specials(t);
        let (xnan, ynan) = (is_nan("x", t), is_nan("y", t));
        self.helper(name.clone(), || {
            format!(
                "fn {name}(x: {c}, y: {c}) -> {c} {{
    if (y == {zero} || x == {one}) {{ return {one}; }}
    if ({xnan} || {ynan}) {{ return {nan}; }}
    let ax = abs(x);
    let ay = abs(y);
    if (ay == {inf}) {{
        if (ax == {one}) {{ return {one}; }}
        if ((ax > {one}) == (y > {zero})) {{ return {inf}; }}
        return {zero};
    }}
    let yint = floor(ay) == ay;
    let odd = yint && ay < {big} && fract(ay * {half}) != {zero};
    var m: {c};
    if (ax == {zero}) {{ m = select({inf}, {zero}, y > {zero}); }}
    else if (ax == {inf}) {{ m = select({zero}, {inf}, y > {zero}); }}
    else {{ m = pow(ax, y); }}
    if ({neg}) {{
        if (!yint && x < {zero} && ax != {inf}) {{ return {nan}; }}
        if (odd) {{ return -m; }}
    }}
    return m;
}}
"
            )
        })
    }

    /// A 16-bit element's load: half of a 32-bit word (atomicLoad where
    /// the array is written, so declared atomic).
    fn half_load(&mut self, name: &str, elem: Ty, writable: bool) -> String {
        self.half(elem);
        let t = elem.tag();
        self.helper(format!("ug_ld_{name}"), || {
            let word = if writable {
                format!("atomicLoad(&p_{name}[i >> 1u])")
            } else {
                format!("p_{name}[i >> 1u]")
            };
            format!(
                "fn ug_ld_{name}(i: u32) -> f32 {{ if (i < n_{name}) {{ return ug_{t}_in(({word} >> ((i & 1u) * 16u)) & 0xffffu); }} return 0.0f; }}\n"
            )
        })
    }

    /// A 16-bit element's store: its half of the word is replaced by a
    /// compare-exchange loop, so a neighbour's store to the other half
    /// (another invocation's) is never lost.
    fn half_store(&mut self, name: &str, elem: Ty) -> String {
        self.half(elem);
        let t = elem.tag();
        self.helper(format!("ug_st_{name}"), || {
            let cas = subword_cas(name, 16, &format!("ug_{t}_out(v)"));
            format!("fn ug_st_{name}(i: u32, v: f32) {{ if (i < n_{name}) {{ {cas} }} }}\n")
        })
    }

    /// A u8 element's load: a quarter of a 32-bit word (atomicLoad where
    /// the array is written, so declared atomic).
    fn byte_load(&mut self, name: &str, writable: bool) -> String {
        self.helper(format!("ug_ld_{name}"), || {
            let word = if writable {
                format!("atomicLoad(&p_{name}[i >> 2u])")
            } else {
                format!("p_{name}[i >> 2u]")
            };
            format!(
                "fn ug_ld_{name}(i: u32, site: u32) -> u32 {{ if (i < n_{name}) {{ return ({word} >> ((i & 3u) * 8u)) & 0xffu; }} ug_fault(site); return 0u; }}\n"
            )
        })
    }

    /// A u8 element's store: its low 8 bits replace its quarter of the
    /// word in a compare-exchange loop, as `half_store` does.
    fn byte_store(&mut self, name: &str) -> String {
        self.helper(format!("ug_st_{name}"), || {
            let cas = subword_cas(name, 8, "(v & 0xffu)");
            format!(
                "fn ug_st_{name}(i: u32, v: u32, site: u32) {{ if (i < n_{name}) {{ {cas} }} else {{ ug_fault(site); }} }}\n"
            )
        })
    }

    fn half(&mut self, elem: Ty) {
        if elem == Ty::F16 {
            self.helper("ug_0_f16".into(), || {
                unigpu_shader_text::F16_WGSL.to_string()
            });
        } else {
            self.helper("ug_0_bf16".into(), || {
                unigpu_shader_text::BF16_WGSL.to_string()
            });
        }
    }

    fn nan_helper(&mut self, which: &str, t: Ty) -> String {
        let name = format!("ug_{which}_{}", t.tag());
        let c = ty(t);
        self.helper(name.clone(), || {
            format!(
                "fn {name}(a: {c}, b: {c}) -> {c} {{ if ({}) {{ return b; }} if ({}) {{ return a; }} return {which}(a, b); }}\n",
                is_nan("a", t),
                is_nan("b", t)
            )
        })
    }
}

/// The store of `value` (a u32 expression whose high bits are clear) into
/// element `i` of array `name`, `bits` wide (16 or 8) packed into 32-bit
/// words: a compare-exchange loop that replaces only its part of the word,
/// so stores to the word's other elements from other invocations are kept.
fn subword_cas(name: &str, bits: u32, value: &str) -> String {
    let (per_word_shift, mask) = if bits == 16 {
        (1, "0xffffu")
    } else {
        (2, "0xffu")
    };
    let lane = (1u32 << per_word_shift) - 1;
    format!(
        "let sh = (i & {lane}u) * {bits}u; let b = {value} << sh; loop {{ let old = atomicLoad(&p_{name}[i >> {per_word_shift}u]); let r = atomicCompareExchangeWeak(&p_{name}[i >> {per_word_shift}u], old, (old & ~({mask} << sh)) | b); if (r.exchanged) {{ break; }} }}"
    )
}

/// Whether `x` is NaN, from its bits: drivers may compile `x != x` as an
/// ordered compare (false for NaN), as lavapipe does.
/// WGSL text for `t`'s +infinity, a quiet NaN, and whether `x` is negative
/// (its sign bit), for the float helpers (fmod, pow): written as bits, since
/// WGSL has no literal for either and a constant expression must not hold
/// one.
fn specials(t: Ty) -> (&'static str, &'static str, &'static str) {
    if t == Ty::F64 {
        (
            "bitcast<f64>(0x7ff0000000000000lu)",
            "bitcast<f64>(0x7ff8000000000000lu)",
            "(bitcast<u64>(x) >> 63u) == 1lu",
        )
    } else {
        (
            "bitcast<f32>(0x7f800000u)",
            "bitcast<f32>(0x7fc00000u)",
            "(bitcast<u32>(x) >> 31u) == 1u",
        )
    }
}

fn is_nan(x: &str, t: Ty) -> String {
    if t == Ty::F64 {
        format!("((bitcast<u64>({x}) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu)")
    } else {
        format!("((bitcast<u32>({x}) & 0x7fffffffu) > 0x7f800000u)")
    }
}

fn elem_of(p: &Param) -> Ty {
    match p.kind {
        ParamKind::Array { elem, .. } => elem,
        ParamKind::Scalar(t) => t,
    }
}

/// A float constant of type `t`.
fn lit_f(v: f64, t: Ty) -> String {
    if t == Ty::F64 {
        lit(Lit::F64(v), t)
    } else {
        lit(Lit::F32(v as f32), t)
    }
}

fn lit(l: Lit, t: Ty) -> String {
    match l {
        Lit::Bool(b) => b.to_string(),
        Lit::Int(bits) => match t {
            Ty::I32 if bits <= i32::MAX as u64 => format!("{bits}i"),
            Ty::I32 => format!("bitcast<i32>({}u)", bits as u32),
            Ty::U32 | Ty::Usize => format!("{}u", bits as u32),
            Ty::I64 if bits <= i64::MAX as u64 => format!("{bits}li"),
            Ty::I64 => format!("bitcast<i64>({bits}lu)"),
            _ => format!("{bits}lu"),
        },
        Lit::F32(v) => format!("{v:e}f"),
        Lit::F64(v) => format!("{v:e}lf"),
    }
}

#[cfg(test)]
mod tests {
    use crate::inbounds::tests::kernel;

    #[test]
    fn parameter_arrays_are_direct_only_when_every_access_is_proven() {
        let mixed = super::emit(
            &kernel(
                syn::parse_quote! {
                    fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
                        let i = global_id().x;
                        if i < y.len() {
                            y[i] = a * x[i] + y[i];
                        }
                    }
                },
                [256, 1, 1],
            ),
            false,
        );
        assert!(
            mixed.contains("ug_st_y(") && mixed.contains("ug_ld_x("),
            "{mixed}"
        );
        let all = super::emit(
            &kernel(
                syn::parse_quote! {
                    fn scale(a: f32, y: &mut [f32]) {
                        let i = global_id().x;
                        if i < y.len() {
                            y[i] = a * y[i];
                        }
                    }
                },
                [256, 1, 1],
            ),
            false,
        );
        assert!(all.contains("p_y[v_i_0] = (p_a * p_y[v_i_0]);"), "{all}");
        assert!(!all.contains("fn ug_st_y"), "{all}");
    }
}
