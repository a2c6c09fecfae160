//! The CUDA C++ emitter (compiled by NVRTC with `--fmad=false`). Signed
//! integer arithmetic goes through unsigned types, where C++ defines
//! wrapping; division, remainder, float-to-integer casts and shifts use
//! the language's definitions (docs/kernels.md), never C++'s undefined
//! cases.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::ir::*;

fn ty(t: Ty) -> &'static str {
    match t {
        Ty::F32 => "float",
        Ty::F64 => "double",
        Ty::I32 => "int",
        Ty::U32 | Ty::Usize => "unsigned int",
        Ty::I64 => "long long",
        Ty::U64 => "unsigned long long",
        Ty::Bool => "bool",
        // Raw 16-bit storage, converted with PTX `cvt` or integer code, so
        // NVRTC needs no cuda_fp16.h.
        Ty::F16 | Ty::Bf16 => "unsigned short",
        Ty::U8 => "unsigned char",
    }
}

/// f16/bf16 <-> f32: PTX `cvt` for f16 (any architecture); bf16 is the
/// top half of an f32, rounded to nearest even in integer code (PTX's
/// `cvt.rn.bf16.f32` needs sm_80), a NaN kept quiet, as `half` does.
const HALF: &str = "static __device__ __forceinline__ float ug_f16_in(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }
static __device__ __forceinline__ unsigned short ug_f16_out(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }
static __device__ __forceinline__ float ug_bf16_in(unsigned short h) { return __uint_as_float(((unsigned int)h) << 16); }
static __device__ __forceinline__ unsigned short ug_bf16_out(float f) { unsigned int x = __float_as_uint(f); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u); return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }
";

/// A scalar parameter's C++ type: bool arrives as a u32.
fn param_ty(t: Ty) -> &'static str {
    if t == Ty::Bool { "unsigned int" } else { ty(t) }
}

/// The unsigned type of the same width.
fn unsigned(t: Ty) -> &'static str {
    if t.bits() == 64 {
        "unsigned long long"
    } else {
        "unsigned int"
    }
}

struct Emit<'k> {
    k: &'k Kernel,
    /// Arrays some atomic uses.
    atomics: std::collections::BTreeSet<Mem>,
    /// Access sites indexed without a check (inbounds.rs proved them).
    proven: std::collections::BTreeSet<u32>,
    helpers: BTreeMap<String, String>,
    out: String,
    /// Inside a widened loop's lanes (widen.rs): accesses at its `i` go to
    /// the arrays' vectors.
    /// (The loop variable, the widened arrays.)
    lanes: Option<(String, Vec<usize>)>,
}

pub fn emit(k: &Kernel) -> String {
    let mut e = Emit {
        k,
        atomics: k.atomics(),
        proven: crate::inbounds::proven(k),
        helpers: BTreeMap::new(),
        out: String::new(),
        lanes: None,
    };
    // Device functions: prototypes first, so any order calls.
    let mut funcs = String::new();
    for f in &k.funcs {
        let params: Vec<&str> = f.params.iter().map(|(_, t)| ty(*t)).collect();
        let _ = writeln!(
            funcs,
            "static __device__ {} {}({});",
            ty(f.ret),
            f.name,
            params.join(", ")
        );
    }
    for f in &k.funcs {
        e.block(&f.body, 1);
        let r = e.expr(&f.result);
        e.line(1, &format!("return {r};"));
        let params: Vec<String> = f
            .params
            .iter()
            .map(|(n, t)| format!("{} {n}", ty(*t)))
            .collect();
        let _ = write!(
            funcs,
            "static __device__ {} {}({}) {{\n{}}}\n",
            ty(f.ret),
            f.name,
            params.join(", "),
            std::mem::take(&mut e.out)
        );
    }
    if !k.shared.is_empty() {
        // CUDA leaves shared memory uninitialised; the language (and WGSL)
        // starts it at zero.
        e.line(1, "const unsigned int ug_tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);");
        e.line(
            1,
            "const unsigned int ug_threads = blockDim.x * blockDim.y * blockDim.z;",
        );
        for sh in &k.shared {
            let (c, name, len) = (ty(sh.elem), &sh.name, &sh.len);
            e.line(1, &format!("__shared__ {c} {name}[{len}];"));
            e.line(
                1,
                &format!(
                    "for (unsigned int i = ug_tid; i < {}; i += ug_threads) {name}[i] = ({c})0;",
                    len.u32_expr()
                ),
            );
        }
        e.line(1, "__syncthreads();");
    }
    let widened = crate::widen::plan(k);
    match (&widened, k.body.split_last()) {
        (Some(w), Some((grid_stride, prefix))) => {
            e.block(prefix, 1);
            e.widened(w);
            e.stmt(grid_stride, 1);
        }
        _ => e.block(&k.body, 1),
    }
    let mut params: Vec<String> = k
        .params
        .iter()
        .map(|p| match p.kind {
            ParamKind::Array {
                elem,
                writable: false,
            } => format!("const {}* p_{}", ty(elem), p.name),
            ParamKind::Array {
                elem,
                writable: true,
            } => format!("{}* p_{}", ty(elem), p.name),
            ParamKind::Scalar(t) => format!("{} p_{}", param_ty(t), p.name),
        })
        .collect();
    params.extend(
        k.arrays()
            .map(|(_, p)| format!("unsigned int n_{}", p.name)),
    );
    // The stream's fault word and this kernel's code (its id << 20),
    // appended by the launch after the lengths.
    params.push("unsigned int* ug_status".into());
    params.push("unsigned int ug_kernel".into());
    let mut s = format!("// Generated by #[unigpu::kernel] from `fn {}`.\n", k.name);
    // The first out-of-bounds access recorded wins (the host reads and
    // clears the word at the next sync); faults at the same moment may
    // race, and one of them stays. Only the out-of-bounds path calls it.
    // Not `atomicCAS`: any global atomic in a module made its load from the
    // disk cache about 0.08 ms slower on an H100 (docs/kernels.md).
    s.push_str("static __device__ __noinline__ void ug_fault(unsigned int* st, unsigned int code) { volatile unsigned int* w = st; if (*w == 0u) *w = code; }\n");
    for h in e.helpers.values() {
        s.push_str(h);
    }
    s.push_str(&funcs);
    let [x, y, z] = k.workgroup;
    let _ = write!(
        s,
        "extern \"C\" __global__ void __launch_bounds__({}) {}({}) {{\n{}}}\n",
        x * y * z,
        k.name,
        params.join(", "),
        e.out
    );
    s
}

impl Emit<'_> {
    fn helper(&mut self, name: String, body: impl FnOnce() -> String) -> String {
        if !self.helpers.contains_key(&name) {
            let text = body();
            self.helpers.insert(name.clone(), text);
        }
        name
    }

    /// A bounds-checked load; `volatile` from an array atomics change
    /// (each read goes to memory, as WGSL's atomicLoad does).
    fn ld_helper(&mut self, elem: Ty, volatile: bool) -> String {
        if elem.is_half() {
            self.half();
            let name = format!("ug_ld_{}", elem.tag());
            return self.helper(name.clone(), || {
                format!(
                    "static __device__ __forceinline__ float {name}(const unsigned short* p, unsigned int n, unsigned int i, unsigned int* st, unsigned int code) {{ if (__builtin_expect(i < n, 1)) return ug_{t}_in(p[i]); ug_fault(st, code); return 0.0f; }}\n",
                    t = elem.tag()
                )
            });
        }
        if elem == Ty::U8 {
            return self.helper("ug_ld_u8".into(), || {
                "static __device__ __forceinline__ unsigned int ug_ld_u8(const unsigned char* p, unsigned int n, unsigned int i, unsigned int* st, unsigned int code) { if (__builtin_expect(i < n, 1)) return p[i]; ug_fault(st, code); return 0u; }\n".to_string()
            });
        }
        let (name, q) = if volatile {
            (format!("ug_ldv_{}", elem.tag()), "const volatile")
        } else {
            (format!("ug_ld_{}", elem.tag()), "const")
        };
        self.helper(name.clone(), || {
            format!(
                "static __device__ __forceinline__ {c} {name}({q} {c}* p, unsigned int n, unsigned int i, unsigned int* st, unsigned int code) {{ if (__builtin_expect(i < n, 1)) return p[i]; ug_fault(st, code); return ({c})0; }}\n",
                c = ty(elem)
            )
        })
    }

    /// `atomicOP` on an element in bounds; the old value, or 0 outside.
    fn atomic_helper(&mut self, op: AtomicOp, elem: Ty) -> String {
        let name = format!("ug_atomic_{}_{}", op.name().to_lowercase(), elem.tag());
        self.helper(name.clone(), || {
            let c = ty(elem);
            let (params, call) = match op {
                AtomicOp::CompareExchange => (format!("{c} cur, {c} v"), "atomicCAS(p + i, cur, v)".to_string()),
                _ => {
                    let f = match op {
                        AtomicOp::Add => "atomicAdd",
                        AtomicOp::Sub => "atomicSub",
                        AtomicOp::Min => "atomicMin",
                        AtomicOp::Max => "atomicMax",
                        AtomicOp::And => "atomicAnd",
                        AtomicOp::Or => "atomicOr",
                        AtomicOp::Xor => "atomicXor",
                        _ => "atomicExch",
                    };
                    (format!("{c} v"), format!("{f}(p + i, v)"))
                }
            };
            format!(
                "static __device__ __forceinline__ {c} {name}({c}* p, unsigned int n, unsigned int i, unsigned int* st, unsigned int code, {params}) {{ if (__builtin_expect(i < n, 1)) return {call}; ug_fault(st, code); return ({c})0; }}\n"
            )
        })
    }

    /// The f16/bf16 conversions, once.
    fn half(&mut self) {
        self.helper("ug_0_half".into(), || HALF.to_string());
    }

    fn st_helper(&mut self, elem: Ty) -> String {
        if elem.is_half() {
            self.half();
            return self.helper(format!("ug_st_{}", elem.tag()), || {
                format!(
                    "static __device__ __forceinline__ void ug_st_{t}(unsigned short* p, unsigned int n, unsigned int i, float v, unsigned int* st, unsigned int code) {{ if (__builtin_expect(i < n, 1)) p[i] = ug_{t}_out(v); else ug_fault(st, code); }}\n",
                    t = elem.tag()
                )
            });
        }
        if elem == Ty::U8 {
            // The low 8 bits, as Rust's `as u8`.
            return self.helper("ug_st_u8".into(), || {
                "static __device__ __forceinline__ void ug_st_u8(unsigned char* p, unsigned int n, unsigned int i, unsigned int v, unsigned int* st, unsigned int code) { if (__builtin_expect(i < n, 1)) p[i] = (unsigned char)v; else ug_fault(st, code); }\n".to_string()
            });
        }
        self.helper(format!("ug_st_{}", elem.tag()), || {
            format!(
                "static __device__ __forceinline__ void ug_st_{t}({c}* p, unsigned int n, unsigned int i, {c} v, unsigned int* st, unsigned int code) {{ if (__builtin_expect(i < n, 1)) p[i] = v; else ug_fault(st, code); }}\n",
                t = elem.tag(),
                c = ty(elem)
            )
        })
    }

    /// The widened part of a grid-stride loop (widen.rs), before the loop
    /// itself, which then starts where this part stopped.
    fn widened(&mut self, w: &crate::widen::Widened) {
        // A vector of N elements, aligned to its size: one 16-byte load for
        // four f32, one 4-byte load for the four u8 beside them.
        self.helper("ug_1_vec".into(), || {
            "template <typename T, unsigned int N> struct alignas(sizeof(T) * N) ug_vec { T v[N]; };\n"
                .into()
        });
        let (var, lanes) = (&w.loop_.var, w.lanes);
        let (end, step) = (self.expr(w.loop_.end), self.expr(w.step));
        let (arrays, names): (Vec<usize>, Vec<String>) = w.named(self.k).into_iter().unzip();
        self.line(1, "{");
        self.line(2, &w.comment());
        self.line(2, &format!("unsigned int ug_vn = {end};"));
        for n in &names {
            self.line(2, &format!("if (n_{n} < ug_vn) ug_vn = n_{n};"));
        }
        self.line(2, &format!("ug_vn /= {lanes}u;"));
        // Each array starts on its vector's size (16 bytes; 4 for the u8
        // lanes beside f32).
        let mut by_size: Vec<(u32, Vec<String>)> = Vec::new();
        for (&a, n) in arrays.iter().zip(&names) {
            let bytes = crate::widen::vector_bytes(self.k, w, a);
            let p = format!("(unsigned long long)p_{n}");
            match by_size.iter_mut().find(|(b, _)| *b == bytes) {
                Some((_, ps)) => ps.push(p),
                None => by_size.push((bytes, vec![p])),
            }
        }
        let masks: Vec<String> = by_size
            .iter()
            .map(|(bytes, ps)| format!("(({}) & {}ull)", ps.join(" | "), bytes - 1))
            .collect();
        self.line(2, &format!("if (({}) == 0ull) {{", masks.join(" | ")));
        self.line(
            3,
            &format!("for (unsigned int ug_v = {var}; ug_v < ug_vn; ug_v += {step}) {{"),
        );
        for (&a, n) in arrays.iter().zip(&names) {
            let v = format!("ug_vec<{}, {lanes}u>", ty(elem_of(&self.k.params[a])));
            if w.loads.contains(&a) {
                self.line(
                    4,
                    &format!("{v} ug_w_{n} = reinterpret_cast<const {v}*>(p_{n})[ug_v];"),
                );
            } else {
                self.line(4, &format!("{v} ug_w_{n};"));
            }
        }
        self.line(4, "#pragma unroll");
        self.line(
            4,
            &format!("for (unsigned int ug_l = 0; ug_l < {lanes}u; ug_l++) {{"),
        );
        self.line(
            5,
            &format!("const unsigned int {var} = ug_v * {lanes}u + ug_l;"),
        );
        self.lanes = Some((var.clone(), arrays.clone()));
        self.block(w.loop_.body, 5);
        self.lanes = None;
        self.line(4, "}");
        for &a in &w.stores {
            let (n, c) = (&self.k.params[a].name, ty(elem_of(&self.k.params[a])));
            self.line(
                4,
                &format!("reinterpret_cast<ug_vec<{c}, {lanes}u>*>(p_{n})[ug_v] = ug_w_{n};"),
            );
        }
        self.line(3, "}");
        self.line(3, &format!("{var} = ug_vn * {lanes}u + {var};"));
        self.line(2, "}");
        self.line(1, "}");
    }

    /// The lane of array `a`'s vector that an access at `index` is, inside
    /// a widened loop's lanes.
    fn lane(&self, a: usize, index: &Expr) -> Option<String> {
        let (var, arrays) = self.lanes.as_ref()?;
        let at_var = matches!(&index.kind, ExprKind::Var(n) if n == var);
        (at_var && arrays.contains(&a)).then(|| format!("ug_w_{}.v[ug_l]", self.k.params[a].name))
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
                name, ty: t, init, ..
            } => {
                let v = self.expr(init);
                self.line(d, &format!("{} {name} = {v};", ty(*t)));
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
                if let Some(lane) = self.lane(*array, index) {
                    let v = self.expr(value);
                    self.line(d, &format!("{lane} = {v};"));
                    return;
                }
                let p = &self.k.params[*array];
                let (name, elem) = (p.name.clone(), elem_of(p));
                if self.proven.contains(site) {
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("p_{name}[{i}] = {v};"));
                    return;
                }
                let st = self.st_helper(elem);
                let (i, v) = (self.expr(index), self.expr(value));
                let f = fault(*site);
                self.line(d, &format!("{st}(p_{name}, n_{name}, {i}, {v}, {f});"));
            }
            Stmt::SharedStore {
                array,
                index,
                value,
                site,
            } => {
                let sh = &self.k.shared[*array];
                let (name, len) = (sh.name.clone(), sh.len.u32_expr());
                if self.proven.contains(site) {
                    let (i, v) = (self.expr(index), self.expr(value));
                    self.line(d, &format!("{name}[{i}] = {v};"));
                    return;
                }
                let st = self.st_helper(sh.elem);
                let (i, v) = (self.expr(index), self.expr(value));
                let f = fault(*site);
                self.line(d, &format!("{st}({name}, {len}, {i}, {v}, {f});"));
            }
            Stmt::Barrier(_) => self.line(d, "__syncthreads();"),
            Stmt::Eval(e) => {
                let v = self.expr(e);
                self.line(d, &format!("(void)({v});"));
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
                self.line(d, "{");
                self.line(d + 1, &format!("const {c} {name}_end = {b};"));
                self.line(
                    d + 1,
                    &format!(
                        "for ({c} {name} = {a}; {name} < {name}_end; {name} = ({c})({name} + 1)) {{"
                    ),
                );
                self.block(body, d + 2);
                self.line(d + 1, "}");
                self.line(d, "}");
            }
            Stmt::While { cond, body } => {
                // The condition is re-evaluated each time round, as in Rust.
                self.line(d, "while (true) {");
                let c = self.expr(cond);
                self.line(d + 1, &format!("if (!({c})) break;"));
                self.block(body, d + 1);
                self.line(d, "}");
            }
            Stmt::Loop(body) => {
                self.line(d, "while (true) {");
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
            ExprKind::Lit(l) => lit(*l, e.ty),
            ExprKind::Var(n) => n.clone(),
            ExprKind::Scalar(i) if e.ty == Ty::Bool => {
                format!("(p_{} != 0u)", self.k.params[*i].name)
            }
            ExprKind::Scalar(i) => format!("p_{}", self.k.params[*i].name),
            ExprKind::Len(i) => format!("n_{}", self.k.params[*i].name),
            ExprKind::Load(a, index, site) => {
                if let Some(lane) = self.lane(*a, index) {
                    // A u8 lane reads as the u32 every u8 load gives.
                    return match elem_of(&self.k.params[*a]) {
                        Ty::U8 => format!("((unsigned int){lane})"),
                        _ => lane,
                    };
                }
                let p = &self.k.params[*a];
                let (name, elem) = (p.name.clone(), elem_of(p));
                if self.proven.contains(site) {
                    return format!("p_{name}[{}]", self.expr(index));
                }
                let ld = self.ld_helper(elem, self.atomics.contains(&Mem::Global(*a)));
                let i = self.expr(index);
                format!("{ld}(p_{name}, n_{name}, {i}, {})", fault(*site))
            }
            ExprKind::Atomic {
                op,
                mem,
                index,
                value,
                current,
                site,
            } => {
                let (ptr, len) = match *mem {
                    Mem::Global(a) => {
                        let n = &self.k.params[a].name;
                        (format!("p_{n}"), format!("n_{n}"))
                    }
                    Mem::Shared(a) => {
                        let s = &self.k.shared[a];
                        (s.name.clone(), s.len.u32_expr())
                    }
                };
                let f = self.atomic_helper(*op, e.ty);
                let i = self.expr(index);
                let c = match current {
                    Some(c) => format!("{}, ", self.expr(c)),
                    None => String::new(),
                };
                let v = self.expr(value);
                format!("{f}({ptr}, {len}, {i}, {}, {c}{v})", fault(*site))
            }
            ExprKind::SharedLoad(a, index, site) => {
                let sh = &self.k.shared[*a];
                let (name, len) = (sh.name.clone(), sh.len.u32_expr());
                if self.proven.contains(site) {
                    return format!("{name}[{}]", self.expr(index));
                }
                let ld = self.ld_helper(sh.elem, self.atomics.contains(&Mem::Shared(*a)));
                let i = self.expr(index);
                format!("{ld}({name}, {len}, {i}, {})", fault(*site))
            }
            ExprKind::Bin(op, l, r) => self.binary(*op, l, r),
            ExprKind::Neg(v) => {
                let x = self.expr(v);
                if v.ty.is_float() {
                    format!("(-{x})")
                } else {
                    format!(
                        "(({})(({})0 - ({})({x})))",
                        ty(v.ty),
                        unsigned(v.ty),
                        unsigned(v.ty)
                    )
                }
            }
            ExprKind::Not(v) => {
                let x = self.expr(v);
                if v.ty == Ty::Bool {
                    format!("(!{x})")
                } else {
                    format!("(({})(~{x}))", ty(v.ty))
                }
            }
            ExprKind::Cast(v) => self.cast(v, e.ty),
            ExprKind::Id(b, axis) => {
                let c = ["x", "y", "z"][*axis];
                // Every launch's block is the declared workgroup size
                // (`Stream::launch` refuses another), so it is a constant.
                let size = self.k.workgroup[*axis];
                // Warps are runs of 32 in the linear thread index.
                let [wx, wy, wz] = self.k.workgroup;
                let linear = match (wy, wz) {
                    (1, 1) => "threadIdx.x".to_string(),
                    (_, 1) => format!("(threadIdx.x + {wx}u * threadIdx.y)"),
                    _ => format!("(threadIdx.x + {wx}u * (threadIdx.y + {wy}u * threadIdx.z))"),
                };
                match b {
                    Builtin::SubgroupSize => "32u".into(),
                    Builtin::SubgroupId => format!("({linear} >> 5)"),
                    Builtin::SubgroupLane => format!("({linear} & 31u)"),
                    Builtin::Global => format!("(blockIdx.{c} * {size}u + threadIdx.{c})"),
                    Builtin::Local => format!("threadIdx.{c}"),
                    Builtin::Group => format!("blockIdx.{c}"),
                    Builtin::Size => format!("{size}u"),
                    Builtin::Groups => format!("gridDim.{c}"),
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
            Add | Sub | Mul if t.is_int() => {
                let u = unsigned(t);
                format!(
                    "(({})(({u})({a}) {} ({u})({b})))",
                    ty(t),
                    crate::lower::op_text(op)
                )
            }
            Div | Rem if t.is_int() => {
                let name = format!("ug_{}_{}", if op == Div { "div" } else { "rem" }, t.tag());
                let c = ty(t);
                let body = match (op, t.is_signed()) {
                    (Div, true) => format!(
                        "return b == 0 ? a : (b == -1 ? ({c})(({u})0 - ({u})a) : a / b);",
                        u = unsigned(t)
                    ),
                    (Div, false) => "return b == 0 ? a : a / b;".to_string(),
                    (_, true) => "return (b == 0 || b == -1) ? 0 : a % b;".to_string(),
                    (_, false) => "return b == 0 ? 0 : a % b;".to_string(),
                };
                let f = self.helper(name.clone(), || {
                    format!(
                        "static __device__ __forceinline__ {c} {name}({c} a, {c} b) {{ {body} }}\n"
                    )
                });
                format!("{f}({a}, {b})")
            }
            // C's fmod is Rust's float `%`: exact, the dividend's sign.
            Rem if t == Ty::F32 => format!("fmodf({a}, {b})"),
            Rem if t == Ty::F64 => format!("fmod({a}, {b})"),
            Shl | Shr => {
                let mask = t.bits() - 1;
                let amount = format!("((unsigned int)({b}) & {mask}u)");
                if op == Shl {
                    format!("(({})(({})({a}) << {amount}))", ty(t), unsigned(t))
                } else {
                    // Arithmetic for signed types (NVCC's `>>`), logical for unsigned.
                    format!("(({})({a}) >> {amount})", ty(t))
                }
            }
            BitXor if t == Ty::Bool => format!("({a} != {b})"),
            BitAnd | BitOr if t == Ty::Bool => {
                format!("((bool)({a} {} {b}))", crate::lower::op_text(op))
            }
            _ => format!("({a} {} {b})", crate::lower::op_text(op)),
        }
    }

    fn cast(&mut self, v: &Expr, to: Ty) -> String {
        let x = self.expr(v);
        let from = v.ty;
        if from.is_float() && to.is_int() {
            // Saturating, NaN to 0 (Rust's `as`).
            let name = format!("ug_cvt_{}_{}", from.tag(), to.tag());
            let (c, f) = (ty(to), ty(from));
            let (lo, hi) = int_range(to);
            let f = self.helper(name.clone(), || {
                format!(
                    "static __device__ __forceinline__ {c} {name}({f} x) {{ if (x != x) return 0; if (x <= ({f}){lo}) return ({c}){lo_bits}; if (x >= ({f}){hi_plus}) return ({c}){hi_bits}; return ({c})x; }}\n",
                    lo = lo,
                    lo_bits = int_lit(int_min_bits(to), to),
                    hi_plus = hi,
                    hi_bits = int_lit(int_max_bits(to), to),
                )
            });
            format!("{f}({x})")
        } else {
            format!("(({})({x}))", ty(to))
        }
    }

    fn math(&mut self, f: Math, args: &[Expr], t: Ty) -> String {
        let a: Vec<String> = args.iter().map(|e| self.expr(e)).collect();
        let s = if t == Ty::F32 { "f" } else { "" };
        match f {
            Math::MulHi => format!("__umulhi({}, {})", a[0], a[1]),
            Math::ToBits => format!("__float_as_uint({})", a[0]),
            Math::SubgroupAdd | Math::SubgroupMax | Math::SubgroupMin => {
                // A butterfly over the warp: after five exchanges every
                // lane holds the same value (each step combines a pair
                // both ways, and + , max, min are commutative).
                let c = ty(t);
                let (op, combine) = match f {
                    Math::SubgroupAdd => ("add", "v + w".to_string()),
                    Math::SubgroupMax if t.is_float() => ("max", format!("fmax{s}(v, w)")),
                    Math::SubgroupMin if t.is_float() => ("min", format!("fmin{s}(v, w)")),
                    Math::SubgroupMax => ("max", "(v > w ? v : w)".into()),
                    _ => ("min", "(v < w ? v : w)".into()),
                };
                let name = format!("ug_subgroup_{op}_{}", t.tag());
                let h = self.helper(name.clone(), || {
                    format!(
                        "static __device__ __forceinline__ {c} {name}({c} v) {{ for (int o = 16; o > 0; o >>= 1) {{ {c} w = __shfl_xor_sync(0xffffffffu, v, o); v = {combine}; }} return v; }}\n"
                    )
                });
                format!("{h}({})", a[0])
            }
            Math::FromBits => format!("__uint_as_float({})", a[0]),
            // Helpers, so each argument is printed (and evaluated) once.
            Math::Abs | Math::Min | Math::Max | Math::Clamp if t.is_int() => {
                let c = ty(t);
                let min = self.helper(format!("ug_min_{}", t.tag()), || {
                    format!("static __device__ __forceinline__ {c} ug_min_{}({c} a, {c} b) {{ return a < b ? a : b; }}\n", t.tag())
                });
                let max = self.helper(format!("ug_max_{}", t.tag()), || {
                    format!("static __device__ __forceinline__ {c} ug_max_{}({c} a, {c} b) {{ return a > b ? a : b; }}\n", t.tag())
                });
                match f {
                    Math::Abs => {
                        let u = unsigned(t);
                        let abs = self.helper(format!("ug_abs_{}", t.tag()), || {
                            format!(
                                "static __device__ __forceinline__ {c} ug_abs_{}({c} a) {{ return a < 0 ? ({c})(({u})0 - ({u})a) : a; }}\n",
                                t.tag()
                            )
                        });
                        format!("{abs}({})", a[0])
                    }
                    Math::Min => format!("{min}({}, {})", a[0], a[1]),
                    Math::Max => format!("{max}({}, {})", a[0], a[1]),
                    _ => format!("{min}({max}({}, {}), {})", a[0], a[1], a[2]),
                }
            }
            Math::Sqrt => format!("sqrt{s}({})", a[0]),
            Math::Rsqrt => format!("rsqrt{s}({})", a[0]),
            Math::Abs => format!("fabs{s}({})", a[0]),
            Math::Min => format!("fmin{s}({}, {})", a[0], a[1]),
            Math::Max => format!("fmax{s}({}, {})", a[0], a[1]),
            Math::Clamp => format!("fmin{s}(fmax{s}({}, {}), {})", a[0], a[1], a[2]),
            Math::Floor => format!("floor{s}({})", a[0]),
            Math::Ceil => format!("ceil{s}({})", a[0]),
            Math::Exp => format!("exp{s}({})", a[0]),
            Math::Exp2 => format!("exp2{s}({})", a[0]),
            Math::Ln => format!("log{s}({})", a[0]),
            Math::Log2 => format!("log2{s}({})", a[0]),
            Math::Sin => format!("sin{s}({})", a[0]),
            Math::Cos => format!("cos{s}({})", a[0]),
            Math::Tan => format!("tan{s}({})", a[0]),
            Math::Tanh => format!("tanh{s}({})", a[0]),
            // Half away from zero, as Rust's.
            Math::Round => format!("round{s}({})", a[0]),
            Math::Pow => format!("pow{s}({}, {})", a[0], a[1]),
            // One rounding (--fmad=false leaves `*` and `+` apart, not fma).
            Math::Fma => format!("fma{s}({}, {}, {})", a[0], a[1], a[2]),
            Math::Powi => {
                let c = ty(t);
                let name = format!("ug_powi_{}", t.tag());
                let f = self.helper(name.clone(), || {
                    format!(
                        "static __device__ __forceinline__ {c} {name}({c} x, int n) {{ {c} r = 1; {c} b = x; unsigned int m = n < 0 ? 0u - (unsigned int)n : (unsigned int)n; while (m > 0) {{ if (m & 1u) r = r * b; b = b * b; m >>= 1; }} return n < 0 ? ({c})1 / r : r; }}\n"
                    )
                });
                format!("{f}({}, {})", a[0], a[1])
            }
        }
    }
}

/// The fault word and the code an access at `site` records there.
fn fault(site: u32) -> String {
    format!("ug_status, ug_kernel | {site}u")
}

fn elem_of(p: &Param) -> Ty {
    match p.kind {
        ParamKind::Array { elem, .. } => elem,
        ParamKind::Scalar(t) => t,
    }
}

/// (the type's minimum, 2^bits of its maximum + 1) as float literals.
fn int_range(t: Ty) -> (String, String) {
    let b = t.bits();
    if t.is_signed() {
        (
            format!("-{}.0", 1u128 << (b - 1)),
            format!("{}.0", 1u128 << (b - 1)),
        )
    } else {
        ("0.0".into(), format!("{}.0", 1u128 << b))
    }
}

pub fn int_min_bits(t: Ty) -> u64 {
    if t.is_signed() {
        1u64 << (t.bits() - 1)
    } else {
        0
    }
}

pub fn int_max_bits(t: Ty) -> u64 {
    match (t.is_signed(), t.bits()) {
        (true, b) => (1u64 << (b - 1)) - 1,
        (false, 64) => u64::MAX,
        (false, b) => (1u64 << b) - 1,
    }
}

fn int_lit(bits: u64, t: Ty) -> String {
    if t.bits() == 64 {
        format!("(({})0x{bits:x}ull)", ty(t))
    } else {
        format!("(({})0x{:x}u)", ty(t), bits as u32)
    }
}

fn lit(l: Lit, t: Ty) -> String {
    match l {
        Lit::Bool(b) => b.to_string(),
        Lit::Int(bits) => int_lit(bits, t),
        Lit::F32(v) => format!("{v:e}f"),
        Lit::F64(v) => format!("{v:e}"),
    }
}
