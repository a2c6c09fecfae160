//! The CPU emitter: the kernel's body as a Rust closure that
//! `generated::run` calls once per invocation, workgroup by workgroup.
//! Integer arithmetic is `wrapping_*`, division and remainder go through
//! `IntDiv`, arrays through the bounds-checked `Ro`/`Rw` views, so the
//! generated code cannot panic.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::ir::*;

fn ty(t: Ty) -> TokenStream {
    let i = format_ident!("{}", t.cpu());
    quote!(#i)
}

fn param(k: &Kernel, i: usize) -> proc_macro2::Ident {
    format_ident!("p_{}", k.params[i].name)
}

pub fn body(k: &Kernel) -> TokenStream {
    block(k, &k.body)
}

fn block(k: &Kernel, stmts: &[Stmt]) -> TokenStream {
    let s = stmts.iter().map(|s| stmt(k, s));
    quote!(#(#s)*)
}

fn stmt(k: &Kernel, s: &Stmt) -> TokenStream {
    match s {
        Stmt::Let {
            name,
            ty: t,
            mutable,
            init,
        } => {
            let (n, t, v) = (format_ident!("{}", name), ty(*t), expr(k, init));
            if *mutable {
                quote!(let mut #n: #t = #v;)
            } else {
                quote!(let #n: #t = #v;)
            }
        }
        Stmt::Assign { name, value } => {
            let (n, v) = (format_ident!("{}", name), expr(k, value));
            quote!(#n = #v;)
        }
        Stmt::Store {
            array,
            index,
            value,
        } => {
            let (p, i, v) = (param(k, *array), expr(k, index), expr(k, value));
            quote!(#p.set(#i, #v);)
        }
        Stmt::Block(b) => {
            let b = block(k, b);
            quote!({ #b })
        }
        Stmt::If { cond, then, els } => {
            let (c, t) = (expr(k, cond), block(k, then));
            if els.is_empty() {
                quote!(if #c { #t })
            } else {
                let e = block(k, els);
                quote!(if #c { #t } else { #e })
            }
        }
        Stmt::For {
            name,
            start,
            end,
            body,
            ..
        } => {
            let (n, a, b, body) = (
                format_ident!("{}", name),
                expr(k, start),
                expr(k, end),
                block(k, body),
            );
            quote!(for #n in (#a)..(#b) { #body })
        }
        Stmt::While { cond, body } => {
            let (c, b) = (expr(k, cond), block(k, body));
            quote!(while #c { #b })
        }
        Stmt::Loop(body) => {
            let b = block(k, body);
            quote!(loop { #b })
        }
        Stmt::Break => quote!(break;),
        Stmt::Continue => quote!(continue;),
        Stmt::Return => quote!(return;),
    }
}

fn expr(k: &Kernel, e: &Expr) -> TokenStream {
    match &e.kind {
        ExprKind::Lit(l) => lit(*l, e.ty),
        ExprKind::Var(n) => {
            let n = format_ident!("{}", n);
            quote!(#n)
        }
        ExprKind::Scalar(i) => {
            let p = param(k, *i);
            quote!(#p)
        }
        ExprKind::Len(i) => {
            let p = param(k, *i);
            quote!(#p.len())
        }
        ExprKind::Load(a, index) => {
            let (p, i) = (param(k, *a), expr(k, index));
            quote!(#p.get(#i))
        }
        ExprKind::Bin(op, l, r) => binary(k, *op, l, r),
        ExprKind::Neg(v) => {
            let x = expr(k, v);
            if v.ty.is_float() {
                quote!((-(#x)))
            } else {
                quote!((#x).wrapping_neg())
            }
        }
        ExprKind::Not(v) => {
            let x = expr(k, v);
            quote!((!(#x)))
        }
        ExprKind::Cast(v) => {
            // Rust's `as` is the language's cast: wrapping between
            // integers, saturating (NaN to 0) from floats to integers.
            let (x, t) = (expr(k, v), ty(e.ty));
            quote!(((#x) as #t))
        }
        ExprKind::Id(b, axis) => {
            let field = match b {
                Builtin::Global => quote!(global),
                Builtin::Local => quote!(local),
                Builtin::Group => quote!(group),
                Builtin::Size => quote!(size),
                Builtin::Groups => quote!(groups),
            };
            quote!(__ids.#field[#axis])
        }
        ExprKind::Math(f, args) => math(k, *f, args, e.ty),
    }
}

fn binary(k: &Kernel, op: BinOp, l: &Expr, r: &Expr) -> TokenStream {
    use BinOp::*;
    let t = l.ty;
    let (a, b) = (expr(k, l), expr(k, r));
    let g = quote!(::unigpu::kernel::generated);
    match op {
        Add if t.is_int() => quote!((#a).wrapping_add(#b)),
        Sub if t.is_int() => quote!((#a).wrapping_sub(#b)),
        Mul if t.is_int() => quote!((#a).wrapping_mul(#b)),
        Div if t.is_int() => quote!(#g::IntDiv::div(#a, #b)),
        Rem if t.is_int() => quote!(#g::IntDiv::rem(#a, #b)),
        Shl => quote!((#a).wrapping_shl((#b) as u32)),
        Shr => quote!((#a).wrapping_shr((#b) as u32)),
        Add => quote!((#a + #b)),
        Sub => quote!((#a - #b)),
        Mul => quote!((#a * #b)),
        Div => quote!((#a / #b)),
        Rem => quote!((#a % #b)),
        BitAnd => quote!((#a & #b)),
        BitOr => quote!((#a | #b)),
        BitXor => quote!((#a ^ #b)),
        Eq => quote!((#a == #b)),
        Ne => quote!((#a != #b)),
        Lt => quote!((#a < #b)),
        Le => quote!((#a <= #b)),
        Gt => quote!((#a > #b)),
        Ge => quote!((#a >= #b)),
        And => quote!((#a && #b)),
        Or => quote!((#a || #b)),
    }
}

fn math(k: &Kernel, f: Math, args: &[Expr], t: Ty) -> TokenStream {
    let a: Vec<TokenStream> = args.iter().map(|e| expr(k, e)).collect();
    let x = &a[0];
    if t.is_int() {
        return match f {
            Math::Abs => quote!((#x).wrapping_abs()),
            Math::Min => {
                let y = &a[1];
                quote!(::core::cmp::Ord::min(#x, #y))
            }
            Math::Max => {
                let y = &a[1];
                quote!(::core::cmp::Ord::max(#x, #y))
            }
            _ => {
                let (lo, hi) = (&a[1], &a[2]);
                quote!(::core::cmp::Ord::min(::core::cmp::Ord::max(#x, #lo), #hi))
            }
        };
    }
    let tt = ty(t);
    match f {
        Math::Sqrt => quote!(#tt::sqrt(#x)),
        Math::Rsqrt => quote!((1.0 / #tt::sqrt(#x))),
        Math::Abs => quote!(#tt::abs(#x)),
        Math::Min => {
            let y = &a[1];
            quote!(#tt::min(#x, #y))
        }
        Math::Max => {
            let y = &a[1];
            quote!(#tt::max(#x, #y))
        }
        Math::Clamp => {
            let (lo, hi) = (&a[1], &a[2]);
            quote!(#tt::min(#tt::max(#x, #lo), #hi))
        }
        Math::Floor => quote!(#tt::floor(#x)),
        Math::Ceil => quote!(#tt::ceil(#x)),
        Math::Exp => quote!(#tt::exp(#x)),
        Math::Exp2 => quote!(#tt::exp2(#x)),
        Math::Ln => quote!(#tt::ln(#x)),
        Math::Log2 => quote!(#tt::log2(#x)),
        Math::Sin => quote!(#tt::sin(#x)),
        Math::Cos => quote!(#tt::cos(#x)),
        Math::Tan => quote!(#tt::tan(#x)),
        Math::Tanh => quote!(#tt::tanh(#x)),
        Math::Powi => {
            let n = &a[1];
            let f = format_ident!("powi_{}", t.tag());
            quote!(::unigpu::kernel::generated::#f(#x, #n))
        }
    }
}

fn lit(l: Lit, t: Ty) -> TokenStream {
    match l {
        Lit::Bool(b) => quote!(#b),
        Lit::Int(bits) => {
            let t = ty(t);
            quote!((#bits as #t))
        }
        Lit::F32(v) => {
            let bits = v.to_bits();
            quote!(f32::from_bits(#bits))
        }
        Lit::F64(v) => {
            let bits = v.to_bits();
            quote!(f64::from_bits(#bits))
        }
    }
}
