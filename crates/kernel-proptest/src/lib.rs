//! `random_kernels!()`: the property test's generator (issue 26, item 6).
//!
//! It writes, deterministically from a seed, N random `#[unigpu::kernel]`
//! functions in the kernel language (docs/kernels.md): integer and float
//! arithmetic, comparisons, logic, casts, math functions, branches, loops
//! with `break`/`continue`, early `return`, workgroup-shared arrays with
//! barriers (also inside uniform loops and branches) and integer atomics on
//! global and shared memory. For each kernel it writes, from the same
//! random tree, a host reference in plain Rust: its own printing of every
//! operation by the language's rules ("Defined results": wrapping
//! integers, `x / 0 == x`, `x % 0 == 0`, shifts modulo the width,
//! saturating casts), and its own simulation of the workgroup (every
//! invocation runs a phase to its barrier before any goes on). Nothing of
//! the macro's code is used: a bug in lower.rs or an emitter cannot hide
//! in the reference.
//!
//! Every kernel has one defined answer:
//! - indices are taken modulo the array's length (no out-of-bounds access,
//!   which is a reported error where the language reports it);
//! - an invocation writes only its own output element and its own
//!   element of the shared `tile`; `tile` is read at any index only in a
//!   phase after a barrier in which nobody writes it;
//! - each atomic array sees one kind of atomic in a kernel (add and sub
//!   together), whose old value is not used, so the order of the
//!   invocations cannot change the final value;
//! - floats use `+ - * /`, `sqrt`, `abs`, `floor`, `ceil` and `powi` (one
//!   rounding each, or the same multiplications, on every backend), never
//!   the transcendental functions (their ulp bounds are tests/kernel_ulp.rs),
//!   nor float `min`/`max` (whose sign of a zero Rust leaves unspecified);
//!   an integer is converted to float only below 2^16 (exact everywhere);
//! - barriers are only where every invocation reaches them: at the top
//!   level, or in a `for` over literal bounds or an `if` on the scalar
//!   argument.
//!
//! `UNIGPU_PROPTEST_SEED` (default [`DEFAULT_SEED`]) and
//! `UNIGPU_PROPTEST_KERNELS` (default [`DEFAULT_COUNT`]) choose the
//! kernels; the expansion reads them through `option_env!`, so cargo
//! rebuilds the test when they change.

use proc_macro::TokenStream;
use std::fmt::Write as _;

/// The seed CI uses: a fixed one keeps a CI failure reproducible.
const DEFAULT_SEED: u64 = 26;
/// Kernels a test build makes by default: enough to reach every
/// construct a few times, few enough that their compile time (each kernel
/// is three emitted forms and a reference) stays within seconds.
const DEFAULT_COUNT: usize = 24;

#[proc_macro]
pub fn random_kernels(_input: TokenStream) -> TokenStream {
    let seed = match std::env::var("UNIGPU_PROPTEST_SEED") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("UNIGPU_PROPTEST_SEED={v:?} is not a u64")),
        Err(_) => DEFAULT_SEED,
    };
    let count = match std::env::var("UNIGPU_PROPTEST_KERNELS") {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("UNIGPU_PROPTEST_KERNELS={v:?} is not a count")),
        Err(_) => DEFAULT_COUNT,
    };
    generate(seed, count)
        .parse()
        .expect("the generated source is Rust")
}

/// splitmix64: small, and the same on every host.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    I32,
    U32,
    F32,
    Usize,
    Bool,
}

impl Ty {
    /// The name in the kernel.
    fn k(self) -> &'static str {
        match self {
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::F32 => "f32",
            Ty::Usize => "usize",
            Ty::Bool => "bool",
        }
    }
    /// The name in the reference: `usize` is 32-bit unsigned in the
    /// language, so the reference computes it as `u32`.
    fn h(self) -> &'static str {
        match self {
            Ty::Usize => "u32",
            t => t.k(),
        }
    }
    fn zero(self) -> &'static str {
        match self {
            Ty::I32 => "0i32",
            Ty::U32 | Ty::Usize => "0u32",
            Ty::F32 => "0.0f32",
            Ty::Bool => "false",
        }
    }
    fn is_int(self) -> bool {
        matches!(self, Ty::I32 | Ty::U32 | Ty::Usize)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Atomic {
    Add,
    Sub,
    And,
    Or,
    Xor,
    Min,
    Max,
}

impl Atomic {
    fn method(self) -> &'static str {
        match self {
            Atomic::Add => "atomic_add",
            Atomic::Sub => "atomic_sub",
            Atomic::And => "atomic_and",
            Atomic::Or => "atomic_or",
            Atomic::Xor => "atomic_xor",
            Atomic::Min => "atomic_min",
            Atomic::Max => "atomic_max",
        }
    }
    /// The reference's new value of `old`.
    fn host(self, old: &str, v: &str) -> String {
        match self {
            Atomic::Add => format!("{old}.wrapping_add({v})"),
            Atomic::Sub => format!("{old}.wrapping_sub({v})"),
            Atomic::And => format!("{old} & ({v})"),
            Atomic::Or => format!("{old} | ({v})"),
            Atomic::Xor => format!("{old} ^ ({v})"),
            Atomic::Min => format!("{old}.min({v})"),
            Atomic::Max => format!("{old}.max({v})"),
        }
    }
}

/// Which use of the shared `tile` a phase may make.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No shared memory in the kernel.
    Plain,
    /// Each invocation reads and writes its own `tile[lid]`; atomics on
    /// `hist`.
    Write,
    /// Any `tile` and `hist` element is read; nothing writes them.
    Read,
}

struct Var {
    name: String,
    ty: Ty,
    mutable: bool,
    /// Declared at a phase's top level: it may live across a barrier,
    /// so the reference holds it per invocation (`v[li]`).
    lifted: bool,
}

/// A (kernel, reference) pair of source texts.
type Pair = (String, String);

struct Gen {
    rng: Rng,
    floats: bool,
    scopes: Vec<Vec<Var>>,
    lifted: Vec<(String, Ty)>,
    next: usize,
    mode: Mode,
    tile: Option<Ty>,
    hist: Option<Ty>,
    acc_op: Atomic,
    hist_op: Atomic,
    loops: usize,
    allow_return: bool,
    wg: usize,
    /// The scope depth of the current phase's top level.
    top: usize,
}

impl Gen {
    fn fresh(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }

    fn var_ref(v: &Var) -> Pair {
        if v.lifted {
            (v.name.clone(), format!("{}[li]", v.name))
        } else {
            (v.name.clone(), v.name.clone())
        }
    }

    fn vars_of(&self, t: Ty, mutable: bool) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (s, scope) in self.scopes.iter().enumerate() {
            for (i, v) in scope.iter().enumerate() {
                if v.ty == t && (!mutable || v.mutable) {
                    out.push((s, i));
                }
            }
        }
        out
    }

    fn declare(&mut self, name: String, ty: Ty, mutable: bool) -> bool {
        let lifted = self.scopes.len() == self.top;
        if lifted {
            self.lifted.push((name.clone(), ty));
        }
        self.scopes.last_mut().unwrap().push(Var {
            name,
            ty,
            mutable,
            lifted,
        });
        lifted
    }

    fn lit(&mut self, t: Ty) -> Pair {
        let s = match t {
            Ty::I32 => {
                let v = self.rng.pick(&[
                    0i64, 1, 2, 3, 5, 7, 16, 31, 32, 33, 100, 1000, 65535, 2147483647,
                ]);
                if self.rng.chance(30) {
                    format!("(-{v}i32)")
                } else {
                    format!("{v}i32")
                }
            }
            Ty::U32 => format!(
                "{}u32",
                self.rng.pick(&[
                    0u64, 1, 2, 3, 7, 31, 32, 33, 255, 65535, 2147483648, 4294967295
                ])
            ),
            Ty::Usize => {
                let v = self.rng.pick(&[0u32, 1, 2, 3, 4, 7, 8, 16, 255]);
                return (format!("{v}usize"), format!("{v}u32"));
            }
            Ty::F32 => {
                let v = self.rng.pick(&[
                    0.0f32, 0.5, 1.0, 2.0, 3.0, 0.25, 1.5, 10.0, 0.1, 100.0, 0.001,
                ]);
                if self.rng.chance(30) {
                    format!("(-{v:?}f32)")
                } else {
                    format!("{v:?}f32")
                }
            }
            Ty::Bool => self.rng.pick(&["true", "false"]).to_string(),
        };
        (s.clone(), s)
    }

    /// An index into an array of length `len` (kernel and host forms),
    /// from a random integer expression.
    fn index(&mut self, d: u32, len_k: &str, len_h: &str) -> Pair {
        let t = self.rng.pick(&[Ty::I32, Ty::U32, Ty::Usize]);
        let (k, h) = self.expr(t, d);
        (
            format!("((({k}) as usize) % {len_k})"),
            format!("(((({h}) as u32) % ({len_h} as u32)) as usize)"),
        )
    }

    fn leaf(&mut self, t: Ty) -> Pair {
        let mut choices: Vec<u8> = vec![0, 0]; // literal
        if !self.vars_of(t, false).is_empty() {
            choices.extend([1, 1, 1, 1]);
        }
        match t {
            Ty::I32 => choices.extend([2, 3, 3]),
            Ty::U32 => choices.extend([4, 4]),
            Ty::F32 => choices.extend([5, 5, 5]),
            Ty::Usize => choices.extend([6, 6, 7]),
            Ty::Bool => choices.extend([8, 8, 8]),
        }
        if self.tile == Some(t) && self.mode != Mode::Plain {
            choices.extend([9, 9]);
        }
        if self.hist == Some(t) && self.mode == Mode::Read {
            choices.extend([10, 10]);
        }
        match self.rng.pick(&choices) {
            0 => self.lit(t),
            1 => {
                let vs = self.vars_of(t, false);
                let (s, i) = self.rng.pick(&vs);
                Self::var_ref(&self.scopes[s][i])
            }
            2 => ("s".into(), "s".into()),
            3 => self.load("a", 0),
            4 => self.load("b", 0),
            5 => {
                let (k, h) = self.load("f", 0);
                (k, format!("h_f({h})"))
            }
            6 => {
                let n = self.rng.pick(&["gid", "lid", "wid"]);
                (n.into(), n.into())
            }
            7 => {
                let a = self.rng.pick(&["a", "b", "f", "oi"]);
                (format!("{a}.len()"), format!("({a}.len() as u32)"))
            }
            8 => self.compare(0),
            9 => {
                if self.mode == Mode::Write {
                    ("tile[lid]".into(), "tile[li]".into())
                } else {
                    let (k, h) = self.index(0, "tile.len()", "tile.len()");
                    (format!("tile[{k}]"), format!("tile[{h}]"))
                }
            }
            _ => {
                let (k, h) = self.index(0, "hist.len()", "hist.len()");
                (format!("hist[{k}]"), format!("hist[{h}]"))
            }
        }
    }

    fn load(&mut self, array: &str, d: u32) -> Pair {
        let (k, h) = self.index(d, &format!("{array}.len()"), &format!("{array}.len()"));
        (format!("{array}[{k}]"), format!("{array}[{h}]"))
    }

    fn compare(&mut self, d: u32) -> Pair {
        let mut types = vec![Ty::I32, Ty::U32, Ty::Usize];
        if self.floats {
            types.extend([Ty::F32, Ty::F32]);
        }
        let t = self.rng.pick(&types);
        let op = self.rng.pick(&["==", "!=", "<", "<=", ">", ">="]);
        let (a, ah) = self.expr(t, d);
        let (b, bh) = self.expr(t, d);
        (format!("({a} {op} {b})"), format!("({ah} {op} {bh})"))
    }

    fn expr(&mut self, t: Ty, d: u32) -> Pair {
        if d == 0 || self.rng.chance(25) {
            return self.leaf(t);
        }
        let d = d - 1;
        match t {
            Ty::Bool => match self.rng.below(5) {
                0 | 1 => self.compare(d),
                2 => {
                    let (a, ah) = self.expr(Ty::Bool, d);
                    let (b, bh) = self.expr(Ty::Bool, d);
                    (format!("({a} && {b})"), format!("({ah} && {bh})"))
                }
                3 => {
                    let (a, ah) = self.expr(Ty::Bool, d);
                    let (b, bh) = self.expr(Ty::Bool, d);
                    (format!("({a} || {b})"), format!("({ah} || {bh})"))
                }
                _ => {
                    let (a, ah) = self.expr(Ty::Bool, d);
                    (format!("(!{a})"), format!("(!{ah})"))
                }
            },
            Ty::F32 => match self.rng.below(10) {
                0..=4 => {
                    let op = self.rng.pick(&["+", "-", "*", "/"]);
                    let (a, ah) = self.expr(t, d);
                    let (b, bh) = self.expr(t, d);
                    (format!("({a} {op} {b})"), format!("h_f({ah} {op} {bh})"))
                }
                5 => {
                    let (a, ah) = self.expr(t, d);
                    (format!("(-{a})"), format!("(-{ah})"))
                }
                6 => {
                    let f = self.rng.pick(&["abs", "sqrt", "floor", "ceil"]);
                    let (a, ah) = self.expr(t, d);
                    (format!("({a}).{f}()"), format!("h_f(({ah}).{f}())"))
                }
                7 => {
                    let n = self.rng.pick(&[-3i32, -2, -1, 0, 1, 2, 3, 5]);
                    let (a, ah) = self.expr(t, d);
                    (
                        format!("({a}).powi({n})"),
                        format!("h_f(h_powi({ah}, {n}))"),
                    )
                }
                _ => self.int_to_float(d),
            },
            _ => self.int_expr(t, d),
        }
    }

    /// An integer converted to f32, below 2^16 in magnitude so that the
    /// conversion is exact on every backend (WGSL lets vulkan round a
    /// value above 2^24 either way).
    fn int_to_float(&mut self, d: u32) -> Pair {
        let from = self.rng.pick(&[Ty::I32, Ty::U32, Ty::Usize]);
        let (a, ah) = self.expr(from, d);
        match from {
            Ty::I32 => (
                format!("((({a}) % 65536i32) as f32)"),
                format!("(h_rem_i32({ah}, 65536i32) as f32)"),
            ),
            Ty::U32 => (
                format!("((({a}) & 65535u32) as f32)"),
                format!("((({ah}) & 65535u32) as f32)"),
            ),
            _ => (
                format!("((({a}) & 65535usize) as f32)"),
                format!("((({ah}) & 65535u32) as f32)"),
            ),
        }
    }

    fn int_expr(&mut self, t: Ty, d: u32) -> Pair {
        let h = t.h();
        match self.rng.below(16) {
            0..=3 => {
                let op = self.rng.pick(&["+", "-", "*", "&", "|", "^"]);
                let (a, ah) = self.expr(t, d);
                let (b, bh) = self.expr(t, d);
                let host = match op {
                    "+" => format!("({ah}).wrapping_add({bh})"),
                    "-" => format!("({ah}).wrapping_sub({bh})"),
                    "*" => format!("({ah}).wrapping_mul({bh})"),
                    _ => format!("({ah} {op} {bh})"),
                };
                (format!("({a} {op} {b})"), host)
            }
            4 | 5 => {
                let op = self.rng.pick(&["/", "%"]);
                let (a, ah) = self.expr(t, d);
                let (b, bh) = self.expr(t, d);
                let f = if op == "/" { "div" } else { "rem" };
                (format!("({a} {op} {b})"), format!("h_{f}_{h}({ah}, {bh})"))
            }
            6 => {
                let op = self.rng.pick(&["<<", ">>"]);
                let at = self.rng.pick(&[t, Ty::U32]);
                let (a, ah) = self.expr(t, d);
                let (b, bh) = self.expr(at, d);
                let f = if op == "<<" {
                    "wrapping_shl"
                } else {
                    "wrapping_shr"
                };
                (
                    format!("({a} {op} {b})"),
                    format!("({ah}).{f}(({bh}) as u32)"),
                )
            }
            7 => {
                let (a, ah) = self.expr(t, d);
                if t == Ty::I32 && self.rng.chance(50) {
                    (format!("(-{a})"), format!("({ah}).wrapping_neg()"))
                } else {
                    (format!("(!{a})"), format!("(!{ah})"))
                }
            }
            8 | 9 => {
                let f = if t == Ty::I32 {
                    self.rng.pick(&["abs", "min", "max", "clamp"])
                } else {
                    self.rng.pick(&["min", "max", "clamp"])
                };
                let (a, ah) = self.expr(t, d);
                match f {
                    "abs" => (format!("({a}).abs()"), format!("({ah}).wrapping_abs()")),
                    "clamp" => {
                        let (lo, loh) = self.expr(t, d);
                        let (hi, hih) = self.expr(t, d);
                        (
                            format!("({a}).clamp({lo}, {hi})"),
                            format!("({ah}).max({loh}).min({hih})"),
                        )
                    }
                    _ => {
                        let (b, bh) = self.expr(t, d);
                        (format!("({a}).{f}({b})"), format!("({ah}).{f}({bh})"))
                    }
                }
            }
            10 | 11 => {
                // A cast from another type: integers wrap or sign-extend,
                // floats truncate and saturate (NaN to 0), bools are 0/1.
                let mut from = vec![Ty::I32, Ty::U32, Ty::Usize, Ty::Bool];
                if self.floats {
                    from.extend([Ty::F32, Ty::F32]);
                }
                from.retain(|f| *f != t);
                let f = self.rng.pick(&from);
                let (a, ah) = self.expr(f, d);
                (format!("(({a}) as {})", t.k()), format!("(({ah}) as {h})"))
            }
            12 => {
                let array = match t {
                    Ty::I32 => "a",
                    Ty::U32 => "b",
                    _ => return self.leaf(t),
                };
                self.load(array, d)
            }
            _ => self.leaf(t),
        }
    }

    fn any_type(&mut self) -> Ty {
        let mut types = vec![Ty::I32, Ty::I32, Ty::U32, Ty::U32, Ty::Usize, Ty::Bool];
        if self.floats {
            types.extend([Ty::F32, Ty::F32, Ty::F32]);
        }
        self.rng.pick(&types)
    }

    /// A list of barrier-free statements; `depth` is how deep in
    /// branches and loops it is.
    fn stmts(&mut self, n: usize, depth: usize) -> Pair {
        let (mut k, mut h) = (String::new(), String::new());
        for _ in 0..n {
            let (a, b) = self.stmt(depth);
            k.push_str(&a);
            h.push_str(&b);
        }
        (k, h)
    }

    fn block(&mut self, n: usize, depth: usize) -> Pair {
        self.scopes.push(Vec::new());
        let r = self.stmts(n, depth);
        self.scopes.pop();
        r
    }

    fn stmt(&mut self, depth: usize) -> Pair {
        let ed = if self.tile.is_some() { 2 } else { 3 };
        loop {
            match self.rng.below(24) {
                0..=6 => {
                    let t = self.any_type();
                    let (e, eh) = self.expr(t, ed);
                    let mutable = self.rng.chance(60);
                    let name = self.fresh("v");
                    let m = if mutable { "mut " } else { "" };
                    let k = format!("let {m}{name}: {} = {e};\n", t.k());
                    let h = if self.declare(name.clone(), t, mutable) {
                        format!("{name}[li] = {eh};\n")
                    } else {
                        format!("let mut {name}: {} = {eh};\n", t.h())
                    };
                    return (k, h);
                }
                7..=9 => {
                    let t = self.any_type();
                    let vs = self.vars_of(t, true);
                    if vs.is_empty() {
                        continue;
                    }
                    let (s, i) = self.rng.pick(&vs);
                    let (vk, vh) = Self::var_ref(&self.scopes[s][i]);
                    let (e, eh) = self.expr(t, ed);
                    if t.is_int() && self.rng.chance(50) {
                        let op = self.rng.pick(&["+", "-", "*", "&", "|", "^", "<<", ">>"]);
                        let host = match op {
                            "+" => format!("({vh}).wrapping_add({eh})"),
                            "-" => format!("({vh}).wrapping_sub({eh})"),
                            "*" => format!("({vh}).wrapping_mul({eh})"),
                            "<<" => format!("({vh}).wrapping_shl(({eh}) as u32)"),
                            ">>" => format!("({vh}).wrapping_shr(({eh}) as u32)"),
                            _ => format!("({vh}) {op} ({eh})"),
                        };
                        return (format!("{vk} {op}= {e};\n"), format!("{vh} = {host};\n"));
                    }
                    return (format!("{vk} = {e};\n"), format!("{vh} = {eh};\n"));
                }
                10 | 11 if depth < 2 => {
                    let (c, ch) = self.expr(Ty::Bool, 2);
                    let n = 1 + self.rng.below(3);
                    let (t, th) = self.block(n, depth + 1);
                    let (e, eh) = if self.rng.chance(50) {
                        let n = 1 + self.rng.below(2);
                        self.block(n, depth + 1)
                    } else {
                        (String::new(), String::new())
                    };
                    return (
                        format!("if {c} {{\n{t}}} else {{\n{e}}}\n"),
                        format!("if {ch} {{\n{th}}} else {{\n{eh}}}\n"),
                    );
                }
                12 if depth < 2 => {
                    // `for` over a range whose end may depend on the data
                    // (and be below the start: no iterations).
                    let t = self.rng.pick(&[Ty::I32, Ty::U32, Ty::Usize]);
                    let start = self.rng.below(3);
                    let (end, endh) = if self.rng.chance(50) {
                        let e = start + self.rng.below(6);
                        (format!("{e}{}", t.k()), format!("{e}{}", t.h()))
                    } else {
                        let (e, eh) = self.expr(t, 2);
                        let (m, mh) = match t {
                            Ty::I32 => {
                                (format!("(({e}) % 6i32)"), format!("h_rem_i32({eh}, 6i32)"))
                            }
                            _ => (
                                format!("(({e}) % 6{})", t.k()),
                                format!("h_rem_u32({eh}, 6u32)"),
                            ),
                        };
                        (m, mh)
                    };
                    let name = self.fresh("j");
                    self.scopes.push(vec![Var {
                        name: name.clone(),
                        ty: t,
                        mutable: false,
                        lifted: false,
                    }]);
                    self.loops += 1;
                    let n = 1 + self.rng.below(3);
                    let (b, bh) = self.block(n, depth + 1);
                    self.loops -= 1;
                    self.scopes.pop();
                    return (
                        format!("for {name} in {start}{}..{end} {{\n{b}}}\n", t.k()),
                        format!("for {name} in {start}{}..{endh} {{\n{bh}}}\n", t.h()),
                    );
                }
                13 if depth < 2 => {
                    // `while` or `loop`, with a counter it cannot outgrow;
                    // the counter steps first, so `continue` is safe.
                    let w = self.fresh("w");
                    let limit = 1 + self.rng.below(5);
                    // The counter is read by the body but never assigned
                    // by it (not mutable to the generator).
                    let lifted = self.declare(w.clone(), Ty::U32, false);
                    let (decl_k, decl_h) = (
                        format!("let mut {w}: u32 = 0u32;\n"),
                        if lifted {
                            format!("{w}[li] = 0u32;\n")
                        } else {
                            format!("let mut {w}: u32 = 0u32;\n")
                        },
                    );
                    let wh = if lifted {
                        format!("{w}[li]")
                    } else {
                        w.clone()
                    };
                    self.loops += 1;
                    let n = 1 + self.rng.below(3);
                    let (b, bh) = self.block(n, depth + 1);
                    self.loops -= 1;
                    if self.rng.chance(50) {
                        let (c, ch) = self.expr(Ty::Bool, 2);
                        return (
                            format!(
                                "{decl_k}while {w} < {limit}u32 && {c} {{\n{w} += 1u32;\n{b}}}\n"
                            ),
                            format!(
                                "{decl_h}while {wh} < {limit}u32 && {ch} {{\n{wh} += 1u32;\n{bh}}}\n"
                            ),
                        );
                    }
                    return (
                        format!(
                            "{decl_k}loop {{\n{w} += 1u32;\nif {w} > {limit}u32 {{\nbreak;\n}}\n{b}}}\n"
                        ),
                        format!(
                            "{decl_h}loop {{\n{wh} += 1u32;\nif {wh} > {limit}u32 {{\nbreak;\n}}\n{bh}}}\n"
                        ),
                    );
                }
                14 | 15 => return self.store(),
                16 => {
                    let (i, ih) = self.index(2, "acc.len()", "acc.len()");
                    let (v, vh) = self.expr(Ty::U32, 2);
                    let op = self.acc_op;
                    return (
                        format!("acc.{}({i}, {v});\n", op.method()),
                        format!("{{ let i = {ih}; acc[i] = {}; }}\n", op.host("acc[i]", &vh)),
                    );
                }
                17 | 18 if self.mode == Mode::Write => {
                    let t = self.tile.unwrap();
                    let (v, vh) = self.expr(t, ed);
                    return (format!("tile[lid] = {v};\n"), format!("tile[li] = {vh};\n"));
                }
                19 if self.mode == Mode::Write => {
                    let t = self.hist.unwrap();
                    let (i, ih) = self.index(2, "hist.len()", "hist.len()");
                    let (v, vh) = self.expr(t, 2);
                    let op = self.hist_op;
                    return (
                        format!("hist.{}({i}, {v});\n", op.method()),
                        format!(
                            "{{ let i = {ih}; hist[i] = {}; }}\n",
                            op.host("hist[i]", &vh)
                        ),
                    );
                }
                20 | 21 if self.loops > 0 => {
                    let what = self.rng.pick(&["break", "continue"]);
                    let (c, ch) = self.expr(Ty::Bool, 2);
                    return (
                        format!("if {c} {{\n{what};\n}}\n"),
                        format!("if {ch} {{\n{what};\n}}\n"),
                    );
                }
                22 if self.allow_return => {
                    let (c, ch) = self.expr(Ty::Bool, 2);
                    return (
                        format!("if {c} {{\nreturn;\n}}\n"),
                        format!("if {ch} {{\ncontinue 'inv;\n}}\n"),
                    );
                }
                _ => continue,
            }
        }
    }

    /// A store to this invocation's own element of an output array.
    fn store(&mut self) -> Pair {
        let mut outs = vec![("oi", Ty::I32), ("ou", Ty::U32)];
        if self.floats {
            outs.push(("of", Ty::F32));
        }
        let (o, t) = self.rng.pick(&outs);
        self.store_to(o, t)
    }

    fn store_to(&mut self, o: &str, t: Ty) -> Pair {
        let (v, vh) = self.expr(t, 3);
        (
            format!("if gid < {o}.len() {{\n{o}[gid] = {v};\n}}\n"),
            format!("if (gid as usize) < {o}.len() {{\n{o}[gid as usize] = {vh};\n}}\n"),
        )
    }

    /// A barrier-free phase: the reference runs it for every invocation
    /// of the workgroup before the next.
    fn phase(&mut self, mode: Mode, n: usize) -> Pair {
        self.mode = mode;
        self.top = self.scopes.len();
        let (k, h) = self.stmts(n, 0);
        let wg = self.wg;
        (
            k,
            format!(
                "'inv: for li in 0..{wg}usize {{\nlet gid = (g * {wg} + li) as u32;\nlet lid = li as u32;\nlet wid = g as u32;\nh_at(li);\n{h}}}\n"
            ),
        )
    }

    /// Writes, a barrier, reads, a barrier: `tile` and `hist` written in
    /// the first phase are read by the whole workgroup in the second.
    fn epoch(&mut self) -> Pair {
        let n = 2 + self.rng.below(3);
        let (w, wh) = self.phase(Mode::Write, n);
        let n = 2 + self.rng.below(3);
        let (r, rh) = self.phase(Mode::Read, n);
        // Every read phase folds a neighbour's `tile` element and one
        // `hist` element into `mix`, which the last `ou` store carries:
        // so a barrier that does not separate the writes from the reads
        // (an invocation reading an element not written yet) shows.
        let wg = self.wg;
        let k = 1 + self.rng.below(wg - 1);
        let j = self.rng.below(16);
        let fold_k = format!(
            "mix = mix ^ ((tile[((lid + {k}usize) % tile.len())]) as u32) ^ ((hist[{j}usize]) as u32);\n"
        );
        let fold_h = format!(
            "mix[li] = mix[li] ^ ((tile[((lid.wrapping_add({k}u32)) % (tile.len() as u32)) as usize]) as u32) ^ ((hist[{j}usize]) as u32);\n"
        );
        let r = format!("{r}{fold_k}");
        let rh = rh.replacen("h_at(li);\n", &format!("h_at(li);\n{fold_h}"), 1);
        (
            format!("{w}barrier();\n{r}barrier();\n"),
            format!("{wh}// barrier\n{rh}// barrier\n"),
        )
    }

    fn kernel(&mut self, index: usize) -> (String, String, Case) {
        let shared = !index.is_multiple_of(3);
        self.floats = self.rng.chance(50);
        self.wg = if shared {
            self.rng.pick(&[32, 64, 128, 256])
        } else {
            self.rng.pick(&[64, 256])
        };
        self.scopes = vec![Vec::new()];
        self.lifted.clear();
        self.acc_op = self.rng.pick(&[
            Atomic::Add,
            Atomic::Sub,
            Atomic::And,
            Atomic::Or,
            Atomic::Xor,
            Atomic::Min,
            Atomic::Max,
        ]);
        self.hist_op = self.rng.pick(&[
            Atomic::Add,
            Atomic::Sub,
            Atomic::And,
            Atomic::Or,
            Atomic::Xor,
            Atomic::Min,
            Atomic::Max,
        ]);
        self.loops = 0;
        self.allow_return = false;
        let name = format!("k{index}");
        let wg = self.wg;
        let (mut body, mut host) = (String::new(), String::new());
        let mut decls = String::new();
        if shared {
            let mut tiles = vec![Ty::I32, Ty::U32];
            if self.floats {
                tiles.push(Ty::F32);
            }
            let tile = self.rng.pick(&tiles);
            let hist = self.rng.pick(&[Ty::I32, Ty::U32]);
            self.tile = Some(tile);
            self.hist = Some(hist);
            body.push_str(&format!(
                "let tile = shared::<{}, {wg}>();\nlet hist = shared::<{}, 16>();\nlet mut mix: u32 = 0u32;\n",
                tile.k(),
                hist.k()
            ));
            decls.push_str(&format!(
                "let mut tile = vec![{}; {wg}];\nlet mut hist = vec![{}; 16];\nlet mut mix = vec![0u32; {wg}];\n",
                tile.zero(),
                hist.zero()
            ));
            // One or two epochs, each maybe inside a uniform `for` (a
            // barrier in a loop) or a uniform `if` on the scalar argument.
            for _ in 0..1 + self.rng.below(2) {
                match self.rng.below(3) {
                    0 => {
                        let (e, eh) = self.epoch();
                        body.push_str(&e);
                        host.push_str(&eh);
                    }
                    1 => {
                        let r = self.fresh("r");
                        let count = 1 + self.rng.below(3);
                        self.scopes.push(vec![Var {
                            name: r.clone(),
                            ty: Ty::U32,
                            mutable: false,
                            lifted: false,
                        }]);
                        let (e, eh) = self.epoch();
                        self.scopes.pop();
                        body.push_str(&format!("for {r} in 0u32..{count}u32 {{\n{e}}}\n"));
                        host.push_str(&format!("for {r} in 0u32..{count}u32 {{\n{eh}}}\n"));
                    }
                    _ => {
                        let cut = self.rng.pick(&[-5i32, 0, 7]);
                        self.scopes.push(Vec::new());
                        let (e, eh) = self.epoch();
                        self.scopes.pop();
                        body.push_str(&format!("if s > {cut}i32 {{\n{e}}}\n"));
                        host.push_str(&format!("if s > {cut}i32 {{\n{eh}}}\n"));
                    }
                }
            }
        } else {
            self.tile = None;
            self.hist = None;
        }
        // The last phase: no barrier follows, so it may return early; it
        // ends with a store to each output.
        self.allow_return = true;
        let mode = if shared { Mode::Read } else { Mode::Plain };
        self.mode = mode;
        self.top = 1;
        let n = 3 + self.rng.below(5);
        let (mut k, mut h) = self.stmts(n, 0);
        let mut outs = vec![("oi", Ty::I32), ("ou", Ty::U32)];
        if self.floats {
            outs.push(("of", Ty::F32));
        }
        for (o, t) in outs {
            let (mut a, mut b) = self.store_to(o, t);
            if shared && o == "ou" {
                a = a.replace("ou[gid] = ", "ou[gid] = mix ^ ");
                b = b.replace("ou[gid as usize] = ", "ou[gid as usize] = mix[li] ^ ");
            }
            k.push_str(&a);
            h.push_str(&b);
        }
        body.push_str(&k);
        host.push_str(&format!(
            "'inv: for li in 0..{wg}usize {{\nlet gid = (g * {wg} + li) as u32;\nlet lid = li as u32;\nlet wid = g as u32;\nh_at(li);\n{h}}}\n"
        ));
        for (n, t) in &self.lifted {
            let _ = writeln!(decls, "let mut {n} = vec![{}; {wg}];", t.zero());
        }
        let kernel = format!(
            "#[unigpu::kernel(workgroup_size = {wg})]\nfn {name}(a: &[i32], b: &[u32], f: &[f32], s: i32, oi: &mut [i32], ou: &mut [u32], of: &mut [f32], acc: &mut [u32]) {{\nlet gid = global_id().x;\nlet lid = local_id().x;\nlet wid = workgroup_id().x;\n{body}}}\n"
        );
        let reference = format!(
            "fn ref_{name}(a: &[i32], b: &[u32], f: &[f32], s: i32, oi: &mut [i32], ou: &mut [u32], of: &mut [f32], acc: &mut [u32], odd: &mut [bool]) {{\nfor g in 0..oi.len().div_ceil({wg}) {{\nh_group({wg});\n{decls}{host}h_mark(odd, g, {wg}, {shared});\n}}\n}}\n"
        );
        (
            kernel,
            reference,
            Case {
                name,
                wg,
                floats: self.floats,
                shared,
            },
        )
    }
}

struct Case {
    name: String,
    wg: usize,
    floats: bool,
    shared: bool,
}

/// The reference's helpers: the language's integer division and
/// remainder, and `powi` as square-and-multiply (the same multiplications
/// on every backend: docs/kernels.md).
const HELPERS: &str = r#"
fn h_div_i32(a: i32, b: i32) -> i32 { if b == 0 { a } else { a.wrapping_div(b) } }
fn h_rem_i32(a: i32, b: i32) -> i32 { if b == 0 { 0 } else { a.wrapping_rem(b) } }
fn h_div_u32(a: u32, b: u32) -> u32 { if b == 0 { a } else { a / b } }
fn h_rem_u32(a: u32, b: u32) -> u32 { if b == 0 { 0 } else { a % b } }
// Which invocations met a float outside the normal range (an infinity, a
// NaN, a subnormal): WGSL leaves those indeterminate (an implementation
// may assume there are none, and may flush subnormals), so on vulkan the
// test leaves out what they computed.
thread_local! {
    static H_ODD: std::cell::RefCell<Vec<bool>> = const { std::cell::RefCell::new(Vec::new()) };
    static H_CUR: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
fn h_group(n: usize) { H_ODD.with(|o| { let mut o = o.borrow_mut(); o.clear(); o.resize(n, false); }); }
fn h_at(li: usize) { H_CUR.with(|c| c.set(li)); }
fn h_f(x: f32) -> f32 {
    if !(x.is_normal() || x == 0.0) { H_ODD.with(|o| o.borrow_mut()[H_CUR.with(|c| c.get())] = true); }
    x
}
/// Marks the elements of group `g` whose invocations met an odd float
/// (with shared memory, every element of a group where one did).
fn h_mark(odd: &mut [bool], g: usize, wg: usize, shared: bool) {
    H_ODD.with(|o| {
        let o = o.borrow();
        let any = o.iter().any(|x| *x);
        for li in 0..wg {
            if let Some(e) = odd.get_mut(g * wg + li) { *e = o[li] || (shared && any); }
        }
    });
}
fn h_powi(x: f32, n: i32) -> f32 {
    let (mut r, mut b, mut m) = (1.0f32, x, n.unsigned_abs());
    while m > 0 {
        if m & 1 == 1 { r *= b; }
        b *= b;
        m >>= 1;
    }
    if n < 0 { 1.0 / r } else { r }
}
"#;

fn generate(seed: u64, count: usize) -> String {
    let mut g = Gen {
        rng: Rng(seed),
        floats: false,
        scopes: Vec::new(),
        lifted: Vec::new(),
        next: 0,
        mode: Mode::Plain,
        tile: None,
        hist: None,
        acc_op: Atomic::Add,
        hist_op: Atomic::Add,
        loops: 0,
        allow_return: false,
        wg: 64,
        top: 1,
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "/// The seed these kernels were generated from.\npub const SEED: u64 = {seed};\n\
         const _SEED_ENV: Option<&str> = option_env!(\"UNIGPU_PROPTEST_SEED\");\n\
         const _COUNT_ENV: Option<&str> = option_env!(\"UNIGPU_PROPTEST_KERNELS\");\n\
         #[allow(warnings, clippy::all, clippy::pedantic)]\npub mod generated {{\nuse super::*;\n{HELPERS}"
    );
    let mut cases = String::new();
    for i in 0..count {
        let (kernel, reference, case) = g.kernel(i);
        let name = &case.name;
        out.push_str(&kernel);
        out.push_str(&reference);
        let _ = writeln!(
            out,
            "fn launch_{name}(ctx: &unigpu::Context, d: &mut super::Device) -> unigpu::Result<()> {{\n\
             let k = {name}::kernel(ctx)?;\n\
             k.launch(ctx, unigpu::Grid::for_elems_with_block(d.n, {wg}), (&d.a, &d.b, &d.f, d.s, &mut d.oi, &mut d.ou, &mut d.of, &mut d.acc))\n}}",
            wg = case.wg
        );
        let _ = writeln!(
            cases,
            "super::Case {{ name: {name:?}, workgroup: {wg}, floats: {floats}, shared: {shared}, source: {src:?}, wgsl: {name}::WGSL, launch: launch_{name}, reference: ref_{name} }},",
            wg = case.wg,
            floats = case.floats,
            shared = case.shared,
            src = kernel,
        );
    }
    let _ = writeln!(out, "pub const CASES: &[super::Case] = &[\n{cases}];\n}}");
    out
}
