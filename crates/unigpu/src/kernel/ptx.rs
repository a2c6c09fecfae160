//! Reads the kernels of PTX text and their parameter lists, so that
//! launches of precompiled code are checked like those of compiled source.
//!
//! A kernel is a `.entry` directive: `.visible .entry NAME(.param .f32
//! NAME_param_0, .param .u64 NAME_param_1, ...)`. PTX says less about a
//! parameter than C++ does, and each reads as what PTX does say:
//!
//! | PTX parameter                            | reads as                              |
//! |------------------------------------------|---------------------------------------|
//! | `.f32`, `.f64`, `.f16`, `.bf16`          | `Scalar` of that float type           |
//! | `.u8` .. `.u64`, `.s8` .. `.s64`         | `Integer { bytes }`: either sign      |
//! | `.u64 .ptr [.global] [.align N]`         | `Pointer { dtype: None }`             |
//! | `.b8` .. `.b64`                          | `Bytes { bytes }`                     |
//! | `[.align N] .b8 name[K]` (a struct)      | `Bytes { bytes: K }`                  |
//!
//! nvcc writes `.u32` for `int` and `unsigned` alike, and `.u64` for every
//! pointer (it adds `.ptr` only at times), for `size_t` and for `long
//! long`; so an integer parameter takes an integer scalar of its width,
//! and a 64-bit one also an array (see [`ParamKind::Integer`]). Anything
//! else (`.texref`, a vector type) leaves that kernel's list unread
//! (`params: None`). Names are the symbols in the PTX: a kernel not
//! declared `extern "C"` has its mangled name (`_Z5saxpyfPKfPfj`).

use super::comments::skip_comment;
use super::signature::{KernelDecl, ParamKind};
use crate::DType;

/// Every kernel (`.entry`) defined or declared in PTX `text`, in order,
/// each name once.
pub fn parse_ptx(text: &str) -> Vec<KernelDecl> {
    let code = strip_comments(text);
    let mut out: Vec<KernelDecl> = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = find_directive(rest, ".entry") {
        let after = rest[at + ".entry".len()..].trim_start();
        rest = after;
        let end = after
            .find(|c: char| !is_name_char(c))
            .unwrap_or(after.len());
        let name = &after[..end];
        if name.is_empty() {
            continue;
        }
        let params = match after[end..].trim_start().strip_prefix('(') {
            Some(list) => match list.find(')') {
                Some(close) => parse_params(&list[..close]),
                None => None,
            },
            // `.entry name { ... }`: no parameters.
            None => Some(Vec::new()),
        };
        if out.iter().any(|d| d.name == name) {
            continue;
        }
        out.push(KernelDecl {
            name: name.to_string(),
            params,
            // Itanium-mangled names start `_Z`; anything else is the name
            // as written, which `extern "C"` keeps.
            extern_c: !name.starts_with("_Z"),
            template: false,
        });
    }
    out
}

fn parse_params(list: &str) -> Option<Vec<ParamKind>> {
    if list.trim().is_empty() {
        return Some(Vec::new());
    }
    list.split(',').map(parse_param).collect()
}

/// One `.param` declaration, without its comma.
fn parse_param(param: &str) -> Option<ParamKind> {
    let mut words = param.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let (mut ty, mut pointer, mut name) = (None, false, String::new());
    while let Some(word) = words.next() {
        match word {
            ".align" => {
                words.next()?.parse::<u32>().ok()?;
            }
            ".ptr" => pointer = true,
            ".global" | ".const" | ".local" | ".shared" => {}
            w if w.starts_with('.') => {
                if ty.replace(w).is_some() {
                    return None;
                }
            }
            // The name, with `[K]` after it, maybe spaced out.
            w => name.push_str(w),
        }
    }
    let ty = ty?;
    let size = type_size(ty)?;
    if let Some(open) = name.find('[') {
        // An array of `K` elements (of `size` bytes each): a struct or a
        // vector passed by value.
        let mut count = 1usize;
        for dim in name[open..].split('[').skip(1) {
            count = count.checked_mul(dim.strip_suffix(']')?.parse().ok()?)?;
        }
        return Some(ParamKind::Bytes {
            bytes: size.checked_mul(count)?,
        });
    }
    if pointer {
        return Some(ParamKind::Pointer {
            dtype: None,
            writable: true,
        });
    }
    Some(match ty {
        ".f32" => ParamKind::Scalar(DType::F32),
        ".f64" => ParamKind::Scalar(DType::F64),
        ".f16" => ParamKind::Scalar(DType::F16),
        ".bf16" => ParamKind::Scalar(DType::BF16),
        t if t.starts_with(".b") => ParamKind::Bytes { bytes: size },
        _ => ParamKind::Integer { bytes: size },
    })
}

/// The size in bytes of a PTX fundamental type, `None` for any other.
fn type_size(ty: &str) -> Option<usize> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        _ => return None,
    })
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%')
}

/// Offset of `word` in `s` as a whole directive: after the start or white
/// space, and before white space or `(`.
fn find_directive(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let before = s[..at].chars().next_back();
        let after = s[at + word.len()..].chars().next();
        if before.is_none_or(char::is_whitespace)
            && after.is_some_and(|c| c.is_whitespace() || c == '(')
        {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// `text` without `//` and `/* */` comments (outside string literals,
/// which `.file` directives hold).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push(c);
                let mut escaped = false;
                for c in chars.by_ref() {
                    out.push(c);
                    if c == '"' && !escaped {
                        break;
                    }
                    escaped = c == '\\' && !escaped;
                }
            }
            '/' if skip_comment(&mut chars, &mut out) => {}
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_nvcc_writes() {
        let ptx = r#"
//
// Generated by NVIDIA NVVM Compiler
.version 8.5
.target sm_90
.address_size 64
.file 1 "/tmp//odd.cu"

.func  (.param .b32 func_retval0) helper(.param .b32 helper_param_0);
	// .globl	saxpy
.visible .entry saxpy(
	.param .f32 saxpy_param_0,
	.param .u64 .ptr .global .align 4 saxpy_param_1,
	.param .u64 saxpy_param_2, /* a comment, with a comma */
	.param .u32 saxpy_param_3
)
.maxntid 256, 1, 1
{
	ret;
}
.visible .entry _Z4halfP6__halfS_(.param .align 2 .b8 _Z4halfP6__halfS__param_0[2], .param .align 8 .b8 p1 [ 16 ])
{ ret; }
.entry noargs
{ ret; }
.visible .entry tex(.param .texref t) { ret; }
"#;
        let k = parse_ptx(ptx);
        let names: Vec<_> = k.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["saxpy", "_Z4halfP6__halfS_", "noargs", "tex"]);
        assert_eq!(
            k[0].params,
            Some(vec![
                ParamKind::Scalar(DType::F32),
                ParamKind::Pointer {
                    dtype: None,
                    writable: true
                },
                ParamKind::Integer { bytes: 8 },
                ParamKind::Integer { bytes: 4 },
            ])
        );
        assert!(k[0].extern_c && !k[1].extern_c);
        assert_eq!(
            k[1].params,
            Some(vec![
                ParamKind::Bytes { bytes: 2 },
                ParamKind::Bytes { bytes: 16 }
            ])
        );
        assert_eq!(k[2].params, Some(vec![]));
        assert_eq!(k[3].params, None);
    }
}
