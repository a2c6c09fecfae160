//! The kinds of built-in op and the element types they take: the
//! vocabulary the public `Ops` and every backend's ops share.

use num_traits::Float as NumFloat;

use crate::element::Element;
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// Floating-point element types the arithmetic ops take: f32, f64, f16 and
/// bf16. f16/bf16 are computed in f32 and rounded once per result.
pub trait Float: Element + sealed::Sealed {
    /// The type arithmetic is done in: f32, or f64 for f64.
    type Acc: Element + NumFloat + Into<f64> + Send + Sync;
    #[doc(hidden)]
    const SUFFIX: &'static str;
    #[doc(hidden)]
    const ACC_SUFFIX: &'static str;
    fn to_acc(self) -> Self::Acc;
    fn from_acc(a: Self::Acc) -> Self;
    /// e^a in the accumulation type, as the CPU's native row kernels
    /// compute it (ops/rows_cpu.rs): f32's through the vectorising
    /// `simd::math::exp` (within 1 ulp), f64's through libm.
    #[doc(hidden)]
    fn exp_acc(a: Self::Acc) -> Self::Acc;
}

macro_rules! float {
    ($t:ty, $acc:ty, $suffix:literal, $acc_suffix:literal, $to:expr, $from:expr, $exp:expr) => {
        impl sealed::Sealed for $t {}
        impl Float for $t {
            type Acc = $acc;
            const SUFFIX: &'static str = $suffix;
            const ACC_SUFFIX: &'static str = $acc_suffix;
            fn to_acc(self) -> $acc {
                $to(self)
            }
            fn from_acc(a: $acc) -> Self {
                $from(a)
            }
            #[inline(always)]
            fn exp_acc(a: $acc) -> $acc {
                $exp(a)
            }
        }
    };
}
float!(f32, f32, "f32", "f32", |x| x, |a| a, crate::simd::math::exp);
float!(f64, f64, "f64", "f64", |x| x, |a| a, f64::exp);
float!(
    f16,
    f32,
    "f16",
    "f32",
    f16::to_f32,
    f16::from_f32,
    crate::simd::math::exp
);
float!(
    bf16,
    f32,
    "bf16",
    "f32",
    bf16::to_f32,
    bf16::from_f32,
    crate::simd::math::exp
);

/// The element-wise ops that take two inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binary {
    Add,
    Sub,
    Mul,
}

impl Binary {
    /// The op's name, as the API spells it.
    pub fn name(self) -> &'static str {
        self.operands()[3]
    }

    /// What errors call the operands `a`, `b` and `out`, then the name.
    pub(crate) fn operands(self) -> [&'static str; 4] {
        match self {
            Binary::Add => ["add (a)", "add (b)", "add (out)", "add"],
            Binary::Sub => ["sub (a)", "sub (b)", "sub (out)", "sub"],
            Binary::Mul => ["mul (a)", "mul (b)", "mul (out)", "mul"],
        }
    }
}

/// The element-wise ops that take one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unary {
    Relu,
    Sigmoid,
    Tanh,
}

impl Unary {
    /// The op's name, as the API spells it.
    pub fn name(self) -> &'static str {
        self.operands()[2]
    }

    /// What errors call the operands `x` and `out`, then the name.
    pub(crate) fn operands(self) -> [&'static str; 3] {
        match self {
            Unary::Relu => ["relu (x)", "relu (out)", "relu"],
            Unary::Sigmoid => ["sigmoid (x)", "sigmoid (out)", "sigmoid"],
            Unary::Tanh => ["tanh (x)", "tanh (out)", "tanh"],
        }
    }
}

/// The reductions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    Sum,
    Max,
    Dot,
}

/// The element-wise math ops of one input, named at run time (the
/// bindings' `neg`, `exp`, ...). `Clamp` takes two scalars (`lo`, `hi`),
/// `PowScalar` one (`p`); the others none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryMath {
    Neg,
    Abs,
    Floor,
    Ceil,
    Round,
    Clamp,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Gelu,
    Silu,
    PowScalar,
}

impl UnaryMath {
    /// The op's name, as the Rust API spells it.
    pub fn name(self) -> &'static str {
        match self {
            UnaryMath::Neg => "neg",
            UnaryMath::Abs => "abs",
            UnaryMath::Floor => "floor",
            UnaryMath::Ceil => "ceil",
            UnaryMath::Round => "round",
            UnaryMath::Clamp => "clamp",
            UnaryMath::Exp => "exp",
            UnaryMath::Log => "log",
            UnaryMath::Sqrt => "sqrt",
            UnaryMath::Rsqrt => "rsqrt",
            UnaryMath::Sin => "sin",
            UnaryMath::Cos => "cos",
            UnaryMath::Gelu => "gelu",
            UnaryMath::Silu => "silu",
            UnaryMath::PowScalar => "pow_scalar",
        }
    }
}

/// The element-wise math ops of two inputs beyond [`Binary`], named at
/// run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryMath {
    Div,
    Minimum,
    Maximum,
    Pow,
}

impl BinaryMath {
    /// The op's name, as the Rust API spells it.
    pub fn name(self) -> &'static str {
        match self {
            BinaryMath::Div => "div",
            BinaryMath::Minimum => "minimum",
            BinaryMath::Maximum => "maximum",
            BinaryMath::Pow => "pow",
        }
    }
}

/// The element-wise comparisons (a u8 0/1 mask out), named at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl Compare {
    /// The op's name, as the Rust API spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compare::Lt => "lt",
            Compare::Le => "le",
            Compare::Gt => "gt",
            Compare::Ge => "ge",
            Compare::Eq => "eq",
            Compare::Ne => "ne",
        }
    }
}
