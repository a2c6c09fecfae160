//! Reads kernel declarations out of CUDA C++ source, so launches can be
//! checked against them. Anything it cannot read (templates, macros,
//! structs) leaves that kernel unchecked rather than guessed at.
//! `ParamKind` is also what precompiled code's parameters read as
//! (`ptx.rs`), where the code says less than C++ does.

use super::comments::skip_comment;
use crate::DType;

/// The declared type of one kernel parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// A value parameter of this element type.
    Scalar(DType),
    /// A pointer; `dtype` is `None` for `void*`. `writable` is false for
    /// `const T*`.
    Pointer {
        dtype: Option<DType>,
        writable: bool,
    },
    /// An integer of `bytes` bytes whose sign the code does not say, as
    /// PTX gives it: nvcc writes `.u32` for `int` and `unsigned` alike.
    /// An integer scalar of that width fits. At 8 bytes (`.u64` without
    /// `.ptr`), which PTX uses for pointers, `size_t` and `long long`
    /// alike, an array fits too, passed as its device address.
    Integer { bytes: usize },
    /// `bytes` bytes of a type the code does not say: a PTX `.b32` or
    /// `.b64`, a `.b8 name[N]` aggregate (a struct, or `__half` by value),
    /// or a parameter known only by its size (the driver's parameter
    /// layout of a CUBIN). A scalar of that width fits; at 8 bytes an
    /// array does too.
    Bytes { bytes: usize },
}

impl ParamKind {
    /// The parameter's size in the kernel's parameter space: a pointer is
    /// 8 bytes.
    pub fn size_bytes(&self) -> usize {
        match self {
            ParamKind::Scalar(d) => d.size_bytes(),
            ParamKind::Pointer { .. } => 8,
            ParamKind::Integer { bytes } | ParamKind::Bytes { bytes } => *bytes,
        }
    }

    /// Whether `self` agrees with `other`, a reading of the same parameter
    /// that may say less (PTX's, or the driver's layout): every argument
    /// `self` accepts, `other` accepts too. Pointers agree whatever their
    /// writability, which neither PTX nor the driver records.
    pub fn refines(&self, other: &ParamKind) -> bool {
        use ParamKind as P;
        match (self, other) {
            (P::Scalar(d), P::Scalar(e)) => d == e,
            (P::Scalar(d), P::Integer { bytes }) => d.is_integer() && d.size_bytes() == *bytes,
            (P::Pointer { dtype: a, .. }, P::Pointer { dtype: b, .. }) => b.is_none() || a == b,
            (P::Pointer { .. }, P::Integer { bytes: 8 }) => true,
            (P::Integer { bytes: a }, P::Integer { bytes: b }) => a == b,
            (
                P::Integer { .. } | P::Bytes { .. } | P::Scalar(_) | P::Pointer { .. },
                P::Bytes { bytes },
            ) => self.size_bytes() == *bytes,
            _ => false,
        }
    }
}

impl std::fmt::Display for ParamKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamKind::Scalar(d) => write!(f, "{d}"),
            ParamKind::Pointer { dtype, writable } => {
                let c = if *writable { "" } else { "const " };
                match dtype {
                    Some(d) => write!(f, "{c}{d}*"),
                    None => write!(f, "{c}void*"),
                }
            }
            ParamKind::Integer { bytes: 8 } => f.write_str("64-bit integer or pointer"),
            ParamKind::Integer { bytes } => write!(f, "{}-bit integer", bytes * 8),
            ParamKind::Bytes { bytes: 8 } => f.write_str("8-byte value or pointer"),
            ParamKind::Bytes { bytes } => write!(f, "{bytes}-byte value"),
        }
    }
}

/// One `__global__` function found in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDecl {
    pub name: String,
    /// `None` when a parameter type could not be read.
    pub params: Option<Vec<ParamKind>>,
    pub extern_c: bool,
    pub template: bool,
}

/// Every `__global__` function declared in `source`.
pub fn parse_kernels(source: &str) -> Vec<KernelDecl> {
    let code = strip_launch_bounds(&strip_comments_and_directives(source));
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("__global__") {
        let before = &rest[..at];
        let after = &rest[at + "__global__".len()..];
        rest = after;
        let Some(open) = after.find('(') else { break };
        let Some(name) = after[..open].split_whitespace().last().map(str::to_string) else {
            continue;
        };
        if !is_identifier(&name) {
            continue;
        }
        let Some(close) = matching_paren(&after[open..]) else {
            continue;
        };
        let param_text = &after[open + 1..open + close];
        let prefix = last_statement(before);
        out.push(KernelDecl {
            params: parse_params(param_text),
            extern_c: prefix.contains("extern \"C\"") || inside_extern_c_block(before),
            template: prefix.contains("template"),
            name,
        });
    }
    out
}

fn parse_params(text: &str) -> Option<Vec<ParamKind>> {
    let text = text.trim();
    if text.is_empty() || text == "void" {
        return Some(Vec::new());
    }
    text.split(',').map(parse_param).collect()
}

fn parse_param(param: &str) -> Option<ParamKind> {
    let pointer = param.matches('*').count();
    if pointer > 1 || param.contains('&') || param.contains('[') {
        return None;
    }
    let cleaned = param.replace('*', " * ");
    let mut words: Vec<&str> = cleaned
        .split_whitespace()
        .filter(|w| !matches!(*w, "__restrict__" | "__restrict" | "restrict" | "volatile"))
        .collect();
    // The last word is the parameter's name unless it is a pointer star.
    if words.len() > 1
        && words
            .last()
            .is_some_and(|w| is_identifier(w) && !is_type_word(w))
    {
        words.pop();
    }
    let is_const_pointee = words
        .iter()
        .position(|w| *w == "const")
        .is_some_and(|c| words.iter().position(|w| *w == "*").is_none_or(|s| c < s));
    let base: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| *w != "const" && *w != "*")
        .collect();
    let base = base.join(" ");
    if pointer == 1 {
        let dtype = if base == "void" {
            None
        } else {
            Some(dtype_of(&base)?)
        };
        Some(ParamKind::Pointer {
            dtype,
            writable: !is_const_pointee,
        })
    } else {
        Some(ParamKind::Scalar(dtype_of(&base)?))
    }
}

fn dtype_of(c_type: &str) -> Option<DType> {
    Some(match c_type {
        "float" => DType::F32,
        "double" => DType::F64,
        "int" | "signed" | "signed int" | "int32_t" => DType::I32,
        "unsigned" | "unsigned int" | "uint32_t" => DType::U32,
        "long long" | "long long int" | "int64_t" | "long" => DType::I64,
        "unsigned long long"
        | "unsigned long long int"
        | "uint64_t"
        | "size_t"
        | "unsigned long" => DType::U64,
        "unsigned char" | "uint8_t" => DType::U8,
        "__half" | "half" => DType::F16,
        "__nv_bfloat16" | "nv_bfloat16" => DType::BF16,
        _ => return None,
    })
}

fn is_type_word(w: &str) -> bool {
    matches!(
        w,
        "int" | "unsigned" | "signed" | "long" | "char" | "float" | "double" | "void" | "short"
    ) || dtype_of(w).is_some()
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Removes `__launch_bounds__(...)`, whose parentheses would otherwise be
/// read as the parameter list.
fn strip_launch_bounds(code: &str) -> String {
    const WORD: &str = "__launch_bounds__";
    let mut s = code.to_string();
    while let Some(at) = s.find(WORD) {
        let rest = &s[at + WORD.len()..];
        let open = rest.find('(').unwrap_or(0);
        let end = match matching_paren(&rest[open..]) {
            Some(close) => at + WORD.len() + open + close + 1,
            None => at + WORD.len(),
        };
        s.replace_range(at..end, " ");
    }
    s
}

/// Offset of the `)` that closes the `(` at the start of `s`.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn last_statement(before: &str) -> &str {
    let cut = before.rfind([';', '}', '{']).map_or(0, |i| i + 1);
    &before[cut..]
}

fn inside_extern_c_block(before: &str) -> bool {
    // `extern "C" {` opened and not closed before this point.
    before.rfind("extern \"C\"").is_some_and(|at| {
        let tail = &before[at..];
        tail.trim_start_matches("extern \"C\"")
            .trim_start()
            .starts_with('{')
            && tail.matches('{').count() > tail.matches('}').count()
    })
}

fn strip_comments_and_directives(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    let mut line_start = true;
    while let Some(c) = chars.next() {
        match c {
            '/' if skip_comment(&mut chars, &mut out) => {}
            '#' if line_start => {
                // Skip the directive, including continued lines.
                let mut prev = '#';
                for c in chars.by_ref() {
                    if c == '\n' && prev != '\\' {
                        break;
                    }
                    prev = c;
                }
                out.push('\n');
                line_start = true;
                continue;
            }
            _ => out.push(c),
        }
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_extern_c_kernels() {
        let src = r#"
            // a comment with __global__ void fake(int)
            #define X 1
            extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float *y, unsigned int n) {}
            extern "C" {
              __global__ void __launch_bounds__(256) twice(double* d, long long n) {}
            }
            template <typename T> __global__ void generic(T* p) {}
            __global__ void weird(MyStruct s) {}
        "#;
        let k = parse_kernels(src);
        let names: Vec<_> = k.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["saxpy", "twice", "generic", "weird"]);
        assert_eq!(
            k[0].params,
            Some(vec![
                ParamKind::Scalar(DType::F32),
                ParamKind::Pointer {
                    dtype: Some(DType::F32),
                    writable: false
                },
                ParamKind::Pointer {
                    dtype: Some(DType::F32),
                    writable: true
                },
                ParamKind::Scalar(DType::U32),
            ])
        );
        assert!(k[0].extern_c && k[1].extern_c && !k[3].extern_c);
        assert_eq!(
            k[1].params,
            Some(vec![
                ParamKind::Pointer {
                    dtype: Some(DType::F64),
                    writable: true
                },
                ParamKind::Scalar(DType::I64),
            ])
        );
        assert!(k[2].template);
        assert_eq!(k[2].params, None);
        assert_eq!(k[3].params, None);
    }

    #[test]
    fn empty_and_void_parameter_lists() {
        let k = parse_kernels(
            "extern \"C\" __global__ void a() {} extern \"C\" __global__ void b(void) {}",
        );
        assert_eq!(k[0].params, Some(vec![]));
        assert_eq!(k[1].params, Some(vec![]));
    }
}
