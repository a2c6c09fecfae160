//! The kernel language's typed IR: what the front end (lower.rs) makes
//! from the Rust function and what each emitter prints.

use proc_macro2::Span;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
    /// Indices and lengths: 32-bit unsigned on every backend.
    Usize,
    Bool,
    /// Only as an array element: loaded as f32, stored rounded from f32.
    F16,
    /// Only as an array element, as f16.
    Bf16,
    /// Only as an array element: loaded as u32, stored as its low 8 bits
    /// (wrapping, as Rust's `as u8`). Masks and bytes; no u8 scalars.
    U8,
}

impl Ty {
    pub fn from_name(name: &str) -> Option<Ty> {
        Some(match name {
            "f32" => Ty::F32,
            "f64" => Ty::F64,
            "i32" => Ty::I32,
            "u32" => Ty::U32,
            "i64" => Ty::I64,
            "u64" => Ty::U64,
            "usize" => Ty::Usize,
            "bool" => Ty::Bool,
            _ => return None,
        })
    }

    /// The Rust name, for messages and the host side.
    pub fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::F64 => "f64",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::I64 => "i64",
            Ty::U64 => "u64",
            Ty::Usize => "usize",
            Ty::Bool => "bool",
            Ty::F16 => "f16",
            Ty::Bf16 => "bf16",
            Ty::U8 => "u8",
        }
    }

    /// A 16-bit float array element (computed in f32).
    pub fn is_half(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16)
    }

    /// An element narrower than the 32-bit word WGSL stores (f16, bf16,
    /// u8): packed into words there, and converted on every load and
    /// store everywhere, so no emitter indexes it directly.
    pub fn is_narrow(self) -> bool {
        matches!(self, Ty::F16 | Ty::Bf16 | Ty::U8)
    }

    /// The type an element of this type is computed in.
    pub fn value(self) -> Ty {
        match self {
            Ty::F16 | Ty::Bf16 => Ty::F32,
            Ty::U8 => Ty::U32,
            t => t,
        }
    }

    /// The type the CPU form computes in (`usize` is 32-bit everywhere).
    pub fn cpu(self) -> &'static str {
        match self {
            Ty::Usize => "u32",
            t => t.name(),
        }
    }

    /// The name helpers are suffixed with.
    pub fn tag(self) -> &'static str {
        self.cpu()
    }

    pub fn is_float(self) -> bool {
        matches!(self, Ty::F32 | Ty::F64)
    }

    pub fn is_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::U32 | Ty::I64 | Ty::U64 | Ty::Usize)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Ty::I32 | Ty::I64)
    }

    pub fn bits(self) -> u32 {
        match self {
            Ty::F64 | Ty::I64 | Ty::U64 => 64,
            Ty::Bool => 1,
            Ty::F16 | Ty::Bf16 => 16,
            Ty::U8 => 8,
            _ => 32,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Array { elem: Ty, writable: bool },
    Scalar(Ty),
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    Global,
    Local,
    Group,
    Size,
    Groups,
    /// `subgroup_size()`: the invocations in a subgroup (32 on CUDA, the
    /// adapter's on Vulkan, 1 on the CPU). Component 0 only.
    SubgroupSize,
    /// `subgroup_id()`: which subgroup of the workgroup the invocation is
    /// in (0 .. workgroup invocations / subgroup_size()).
    SubgroupId,
    /// `subgroup_invocation_id()`: the invocation's index in its subgroup.
    SubgroupLane,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    /// The value's two's-complement bits, wrapped to the type's width.
    Int(u64),
    F32(f32),
    F64(f64),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Math {
    Sqrt,
    Rsqrt,
    Abs,
    Min,
    Max,
    Clamp,
    Floor,
    Ceil,
    Exp,
    Exp2,
    Ln,
    Log2,
    Sin,
    Cos,
    Tan,
    Tanh,
    Powi,
    /// `x.powf(y)` / `pow(x, y)`.
    Pow,
    /// Half away from zero (Rust's `round`).
    Round,
    /// `fma(a, b, c)` / `a.mul_add(b, c)`: one rounding.
    Fma,
    /// `mul_hi(a, b)`: the high 32 bits of the 64-bit product of two u32
    /// (CUDA's `__umulhi`; what counter-based generators multiply with).
    MulHi,
    /// `x.to_bits()` of an f32: its IEEE-754 bits as a u32 (CUDA's
    /// `__float_as_uint`, WGSL's `bitcast<u32>`).
    ToBits,
    /// `f32::from_bits(u)`: the f32 whose bits are the u32 `u`.
    FromBits,
    /// `subgroup_add(v)`: the sum of `v` over the invocation's subgroup,
    /// the same value in each. Only the whole value of a `let` or an
    /// assignment, reached by the whole workgroup (`uniform.rs`).
    SubgroupAdd,
    /// `subgroup_max(v)`, as `.max()` over the subgroup.
    SubgroupMax,
    /// `subgroup_min(v)`, as `.min()` over the subgroup.
    SubgroupMin,
}

impl Math {
    /// Whether this is a subgroup operation (a collective, like `barrier()`).
    pub fn is_subgroup(self) -> bool {
        matches!(
            self,
            Math::SubgroupAdd | Math::SubgroupMax | Math::SubgroupMin
        )
    }
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Lit(Lit),
    /// A local variable (its emitted name).
    Var(String),
    /// A scalar parameter, by position.
    Scalar(usize),
    /// An array parameter's length.
    Len(usize),
    /// An array parameter's element; out of bounds reads give zero and
    /// record a fault at the access site (`Kernel::sites`, the last field).
    Load(usize, Box<Expr>, u32),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    /// `!`: logical on bool, bitwise on integers.
    Not(Box<Expr>),
    /// `as` to the expression's type.
    Cast(Box<Expr>),
    /// A thread index component (0, 1, 2 for x, y, z).
    Id(Builtin, usize),
    Math(Math, Vec<Expr>),
    /// A workgroup-shared array's element (by its position in
    /// `Kernel::shared`); out of bounds reads give zero and record a
    /// fault at the access site.
    SharedLoad(usize, Box<Expr>, u32),
    /// An integer atomic on an element; gives the element's old value
    /// (0, and nothing done, out of bounds).
    Atomic {
        op: AtomicOp,
        mem: Mem,
        index: Box<Expr>,
        value: Box<Expr>,
        /// `compare_exchange`'s expected value.
        current: Option<Box<Expr>>,
        /// The access site (`Kernel::sites`).
        site: u32,
    },
    /// A `#[unigpu::device]` function, by position in `Kernel::funcs`.
    Call(usize, Vec<Expr>),
}

/// A `#[unigpu::device]` function: scalars in, one scalar out, no memory
/// or thread indices, so every backend can inline or call it.
#[derive(Debug, Clone)]
pub struct Func {
    /// The emitted name.
    pub name: String,
    /// Emitted parameter names and types.
    pub params: Vec<(String, Ty)>,
    pub ret: Ty,
    pub body: Vec<Stmt>,
    /// The trailing expression.
    pub result: Expr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    Add,
    Sub,
    Min,
    Max,
    And,
    Or,
    Xor,
    Exchange,
    CompareExchange,
}

impl AtomicOp {
    pub fn from_method(m: &str) -> Option<AtomicOp> {
        Some(match m {
            "atomic_add" => AtomicOp::Add,
            "atomic_sub" => AtomicOp::Sub,
            "atomic_min" => AtomicOp::Min,
            "atomic_max" => AtomicOp::Max,
            "atomic_and" => AtomicOp::And,
            "atomic_or" => AtomicOp::Or,
            "atomic_xor" => AtomicOp::Xor,
            "atomic_exchange" => AtomicOp::Exchange,
            "atomic_compare_exchange" => AtomicOp::CompareExchange,
            _ => return None,
        })
    }

    /// The variant's name (`generated::AtomicOp::NAME` on the CPU).
    pub fn name(self) -> &'static str {
        match self {
            AtomicOp::Add => "Add",
            AtomicOp::Sub => "Sub",
            AtomicOp::Min => "Min",
            AtomicOp::Max => "Max",
            AtomicOp::And => "And",
            AtomicOp::Or => "Or",
            AtomicOp::Xor => "Xor",
            AtomicOp::Exchange => "Exchange",
            AtomicOp::CompareExchange => "CompareExchange",
        }
    }
}

/// An array a kernel can name: a parameter or a shared array, by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mem {
    Global(usize),
    Shared(usize),
}

impl Expr {
    /// Calls `f` on this expression and every one inside it.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match &self.kind {
            ExprKind::Load(_, i, _) | ExprKind::SharedLoad(_, i, _) => i.visit(f),
            ExprKind::Bin(_, l, r) => {
                l.visit(f);
                r.visit(f);
            }
            ExprKind::Neg(v) | ExprKind::Not(v) | ExprKind::Cast(v) => v.visit(f),
            ExprKind::Math(_, a) | ExprKind::Call(_, a) => a.iter().for_each(|x| x.visit(f)),
            ExprKind::Atomic {
                index,
                value,
                current,
                ..
            } => {
                index.visit(f);
                value.visit(f);
                if let Some(c) = current {
                    c.visit(f);
                }
            }
            ExprKind::Lit(_)
            | ExprKind::Var(_)
            | ExprKind::Scalar(_)
            | ExprKind::Len(_)
            | ExprKind::Id(..) => {}
        }
    }
}

/// Calls `f` on every expression in `stmts`, at any depth.
pub fn visit_exprs(stmts: &[Stmt], f: &mut impl FnMut(&Expr)) {
    for s in stmts {
        match s {
            Stmt::Let { init: e, .. }
            | Stmt::Assign { value: e, .. }
            | Stmt::Eval(e)
            | Stmt::ReturnValue(e) => e.visit(f),
            Stmt::Store { index, value, .. } | Stmt::SharedStore { index, value, .. } => {
                index.visit(f);
                value.visit(f);
            }
            Stmt::Block(b) | Stmt::Loop(b) => visit_exprs(b, f),
            Stmt::If { cond, then, els } => {
                cond.visit(f);
                visit_exprs(then, f);
                visit_exprs(els, f);
            }
            Stmt::For {
                start, end, body, ..
            } => {
                start.visit(f);
                end.visit(f);
                visit_exprs(body, f);
            }
            Stmt::While { cond, body } => {
                cond.visit(f);
                visit_exprs(body, f);
            }
            Stmt::Barrier(_) | Stmt::Break(_) | Stmt::Continue(_) | Stmt::Return(_) => {}
        }
    }
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Let {
        name: String,
        ty: Ty,
        mutable: bool,
        init: Expr,
    },
    Assign {
        name: String,
        value: Expr,
    },
    /// Out of bounds stores do nothing and record a fault at `site`.
    Store {
        array: usize,
        index: Expr,
        value: Expr,
        site: u32,
    },
    /// A shared array's element; out of bounds stores do nothing and
    /// record a fault at `site`.
    SharedStore {
        array: usize,
        index: Expr,
        value: Expr,
        site: u32,
    },
    /// `barrier()`: every invocation of the workgroup waits here, and
    /// the shared and global writes before it are seen after it.
    Barrier(Span),
    /// An expression run for its effect (an atomic whose old value is
    /// not used).
    Eval(Expr),
    Block(Vec<Stmt>),
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Vec<Stmt>,
    },
    /// `for name in start..end`, `end` evaluated once.
    For {
        name: String,
        ty: Ty,
        start: Expr,
        end: Expr,
        body: Vec<Stmt>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    Loop(Vec<Stmt>),
    Break(Span),
    Continue(Span),
    Return(Span),
    /// `return v;` in a device function.
    ReturnValue(Expr),
}

/// Calls `f` on every statement of `stmts`, at any depth, that gives a
/// variable a value (`let`, an assignment, a `for` loop's counter), with
/// the variable's name.
pub fn each_definition<'a>(stmts: &'a [Stmt], f: &mut impl FnMut(&'a str, &'a Stmt)) {
    for s in stmts {
        match s {
            Stmt::Assign { name, .. } | Stmt::Let { name, .. } => f(name, s),
            Stmt::For { name, body, .. } => {
                f(name, s);
                each_definition(body, f);
            }
            Stmt::Block(b) | Stmt::Loop(b) | Stmt::While { body: b, .. } => each_definition(b, f),
            Stmt::If { then, els, .. } => {
                each_definition(then, f);
                each_definition(els, f);
            }
            _ => {}
        }
    }
}

impl Stmt {
    /// Whether a `barrier()` is in this statement, at any depth.
    pub fn has_barrier(&self) -> bool {
        match self {
            Stmt::Barrier(_) => true,
            Stmt::Block(b) | Stmt::Loop(b) => b.iter().any(Stmt::has_barrier),
            Stmt::If { then, els, .. } => {
                then.iter().any(Stmt::has_barrier) || els.iter().any(Stmt::has_barrier)
            }
            Stmt::For { body, .. } | Stmt::While { body, .. } => body.iter().any(Stmt::has_barrier),
            _ => false,
        }
    }
}

/// A workgroup-shared array: `let tile = shared::<f32, 256>();`.
#[derive(Debug, Clone)]
pub struct Shared {
    /// The emitted name.
    pub name: String,
    pub elem: Ty,
    pub len: Size,
}

/// A shared array's length: a literal, or a kernel's `const N: usize`
/// parameter (its emitted name), whose value the CUDA and WGSL forms get
/// from a preamble and the CPU form from a `let` when the kernel is
/// instantiated (generics.rs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Size {
    Lit(u32),
    Const(String),
}

impl Size {
    /// The length as a u32 expression in CUDA or WGSL (`256u`, `c_N`).
    pub fn u32_expr(&self) -> String {
        match self {
            Size::Lit(n) => format!("{n}u"),
            Size::Const(c) => c.clone(),
        }
    }

    /// The literal length, if it is one.
    pub fn lit(&self) -> Option<u32> {
        match self {
            Size::Lit(n) => Some(*n),
            Size::Const(_) => None,
        }
    }
}

/// As an array size in CUDA or WGSL (`256`, `c_N`).
impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Size::Lit(n) => write!(f, "{n}"),
            Size::Const(c) => f.write_str(c),
        }
    }
}

/// As a u32 in the CPU form (`256u32`, `c_N`).
impl quote::ToTokens for Size {
    fn to_tokens(&self, out: &mut proc_macro2::TokenStream) {
        match self {
            Size::Lit(n) => n.to_tokens(out),
            Size::Const(c) => quote::format_ident!("{}", c).to_tokens(out),
        }
    }
}

/// How an array element is used at an access site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    Atomic,
}

impl Access {
    /// The variant's name (`generated::Access::NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "Read",
            Access::Write => "Write",
            Access::Atomic => "Atomic",
        }
    }
}

/// One place the kernel indexes an array, numbered in `Kernel::sites`:
/// an out-of-bounds index there is reported naming the array and the line.
#[derive(Debug, Clone)]
pub struct Site {
    /// The array as the source names it.
    pub array: String,
    /// The indexing expression (its line is the one reported).
    pub span: Span,
    pub access: Access,
}

/// One kernel, checked.
#[derive(Debug)]
pub struct Kernel {
    pub name: String,
    pub params: Vec<Param>,
    pub workgroup: [u32; 3],
    pub shared: Vec<Shared>,
    /// Device functions (no recursion: the front end checks).
    pub funcs: Vec<Func>,
    pub body: Vec<Stmt>,
    /// Every array access site, by the number the IR's accesses carry.
    pub sites: Vec<Site>,
}

impl Kernel {
    /// Whether the CPU form runs workgroup by workgroup in phases (a
    /// barrier or shared memory needs the workgroup's invocations together).
    /// The arrays some atomic uses (WGSL declares them `atomic<T>`).
    pub fn atomics(&self) -> std::collections::BTreeSet<Mem> {
        let mut out = std::collections::BTreeSet::new();
        visit_exprs(&self.body, &mut |e| {
            if let ExprKind::Atomic { mem, .. } = &e.kind {
                out.insert(*mem);
            }
        });
        out
    }

    /// Whether the kernel calls a subgroup operation or reads a subgroup
    /// built-in (Vulkan adapters may lack them).
    pub fn uses_subgroups(&self) -> bool {
        let mut found = false;
        visit_exprs(&self.body, &mut |e| {
            found |= match &e.kind {
                ExprKind::Id(b, _) => matches!(
                    b,
                    Builtin::SubgroupSize | Builtin::SubgroupId | Builtin::SubgroupLane
                ),
                ExprKind::Math(f, _) => f.is_subgroup(),
                _ => false,
            };
        });
        found
    }

    /// Whether any type the kernel (or a device function it calls)
    /// declares or computes with satisfies `f`.
    pub fn uses(&self, f: impl Fn(Ty) -> bool) -> bool {
        let mut found = self.params.iter().any(|p| match p.kind {
            ParamKind::Array { elem, .. } => f(elem),
            ParamKind::Scalar(t) => f(t),
        }) || self.shared.iter().any(|s| f(s.elem));
        let mut visit = |e: &Expr| found |= f(e.ty);
        visit_exprs(&self.body, &mut visit);
        for func in &self.funcs {
            visit_exprs(&func.body, &mut visit);
            func.result.visit(&mut visit);
        }
        found
            || self
                .funcs
                .iter()
                .any(|func| f(func.ret) || func.params.iter().any(|(_, t)| f(*t)))
    }

    /// The first f64 math function in the kernel or its functions that
    /// SPIR-V's GLSL.std.450 has no 64-bit form of (exp, exp2, ln, log2,
    /// sin, cos, tan, tanh, pow): the vulkan backend refuses the kernel
    /// (NVIDIA's driver lost the device on such a kernel; lavapipe's f64
    /// exp was 18 % off). Its name in the language; "" for none.
    pub fn f64_only_f32_math(&self) -> &'static str {
        let mut found = "";
        let mut visit = |e: &Expr| {
            if let ExprKind::Math(f, _) = &e.kind
                && e.ty == Ty::F64
                && found.is_empty()
            {
                found = match f {
                    Math::Exp => "exp",
                    Math::Exp2 => "exp2",
                    Math::Ln => "ln",
                    Math::Log2 => "log2",
                    Math::Sin => "sin",
                    Math::Cos => "cos",
                    Math::Tan => "tan",
                    Math::Tanh => "tanh",
                    Math::Pow => "powf",
                    _ => "",
                };
            }
        };
        visit_exprs(&self.body, &mut visit);
        for func in &self.funcs {
            visit_exprs(&func.body, &mut visit);
            func.result.visit(&mut visit);
        }
        found
    }

    /// Whether an `fma` of type `t` is in the kernel or its functions.
    pub fn uses_fma(&self, t: Ty) -> bool {
        let mut found = false;
        let mut visit =
            |e: &Expr| found |= matches!(e.kind, ExprKind::Math(Math::Fma, _)) && e.ty == t;
        visit_exprs(&self.body, &mut visit);
        for func in &self.funcs {
            visit_exprs(&func.body, &mut visit);
            func.result.visit(&mut visit);
        }
        found
    }

    pub fn phased(&self) -> bool {
        !self.shared.is_empty() || self.body.iter().any(Stmt::has_barrier)
    }

    /// Array parameters in order, with their positions: the hidden
    /// length parameters follow the declared ones in this order.
    pub fn arrays(&self) -> impl Iterator<Item = (usize, &Param)> {
        self.params
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, ParamKind::Array { .. }))
    }
}
