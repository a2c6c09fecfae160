//! Naming rules shared by validation and the emitters.

/// Joins `prefix` and `name` with `_` without ever repeating the prefix.
///
/// - `name` already starts with the whole prefix (`ug_cuda_rt_malloc`): kept as is.
/// - the head segments of the name equal a run of the prefix's segments
///   other than its first (`ug_cuda_rt` + `cuda_malloc`, `rt_malloc` or
///   `cuda_rt_malloc`; `ug_torch` + `torch_stream`): that run is written
///   once (`ug_cuda_rt_malloc`, `ug_torch_stream`); the longest run wins.
/// - otherwise: `prefix_name`.
///
/// This is the fix for the earlier generator's doubled symbols (a prefix
/// followed by the library's own name again, such as `ug_cuda_rt_cuda_*`).
pub fn join_prefix(prefix: &str, name: &str) -> String {
    if name == prefix || name.starts_with(&format!("{prefix}_")) {
        return name.to_string();
    }
    let p: Vec<&str> = prefix.split('_').collect();
    let n: Vec<&str> = name.split('_').collect();
    let max = (p.len() - 1).min(n.len().saturating_sub(1));
    for k in (1..=max).rev() {
        if p[1..].windows(k).any(|run| run == &n[..k]) {
            return format!("{prefix}_{}", n[k..].join("_"));
        }
    }
    format!("{prefix}_{name}")
}

/// The name without its prefix (the inverse of [`join_prefix`]): the Rust
/// name of a function whose C name is `join_prefix(prefix, name)`.
pub fn strip_prefix(prefix: &str, name: &str) -> String {
    let joined = join_prefix(prefix, name);
    joined
        .strip_prefix(&format!("{prefix}_"))
        .unwrap_or(&joined)
        .to_string()
}

/// `CudaStream` -> `cuda_stream`, `HTTPServer` -> `http_server`.
pub fn snake_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `[a-z][a-z0-9_]*`, no `__`, not ending in `_`.
pub fn is_snake_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !s.contains("__")
        && !s.ends_with('_')
}

/// `[A-Z][A-Za-z0-9]*`.
pub fn is_camel_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('A'..='Z')) && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// A C++ identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_cpp_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z' | 'A'..='Z' | '_'))
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The language in which `word` is a keyword (or reserved), if any.
pub fn keyword_of(word: &str) -> Option<&'static str> {
    const RUST: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod",
        "move", "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait",
        "true", "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do",
        "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
    ];
    const C: &[&str] = &[
        "auto",
        "char",
        "default",
        "double",
        "float",
        "goto",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "short",
        "signed",
        "sizeof",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "case",
        "bool",
        "alignas",
        "alignof",
        "nullptr",
        "static_assert",
        "thread_local",
        "errno",
    ];
    const CPP: &[&str] = &[
        "and",
        "and_eq",
        "asm",
        "bitand",
        "bitor",
        "catch",
        "char8_t",
        "char16_t",
        "char32_t",
        "class",
        "compl",
        "concept",
        "consteval",
        "constexpr",
        "constinit",
        "const_cast",
        "co_await",
        "co_return",
        "co_yield",
        "decltype",
        "delete",
        "dynamic_cast",
        "explicit",
        "export",
        "friend",
        "module",
        "mutable",
        "namespace",
        "new",
        "noexcept",
        "not",
        "not_eq",
        "operator",
        "or",
        "or_eq",
        "private",
        "protected",
        "public",
        "reinterpret_cast",
        "requires",
        "static_cast",
        "template",
        "this",
        "throw",
        "typeid",
        "typename",
        "using",
        "wchar_t",
        "xor",
        "xor_eq",
    ];
    if RUST.contains(&word) {
        Some("Rust")
    } else if C.contains(&word) {
        Some("C")
    } else if CPP.contains(&word) {
        Some("C++")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_never_doubles_the_prefix() {
        assert_eq!(join_prefix("ug_cuda_rt", "malloc"), "ug_cuda_rt_malloc");
        assert_eq!(
            join_prefix("ug_cuda_rt", "cuda_malloc"),
            "ug_cuda_rt_malloc"
        );
        assert_eq!(join_prefix("ug_cuda_rt", "rt_malloc"), "ug_cuda_rt_malloc");
        assert_eq!(
            join_prefix("ug_cuda_rt", "cuda_rt_malloc"),
            "ug_cuda_rt_malloc"
        );
        assert_eq!(
            join_prefix("ug_cuda_rt", "ug_cuda_rt_malloc"),
            "ug_cuda_rt_malloc"
        );
        assert_eq!(
            join_prefix("ug_cuda_rt", "cuda_stream"),
            "ug_cuda_rt_stream"
        );
        // Only the library's segments overlap, not the `ug` namespace, and
        // a run must be contiguous.
        assert_eq!(
            join_prefix("ug_cuda_rt", "ug_malloc"),
            "ug_cuda_rt_ug_malloc"
        );
        assert_eq!(join_prefix("ug_a_b", "b_a_x"), "ug_a_b_a_x");
        // A name is never emptied.
        assert_eq!(join_prefix("ug_cuda_rt", "cuda"), "ug_cuda_rt_cuda");
        assert_eq!(join_prefix("ug_torch", "torch_stream"), "ug_torch_stream");
        assert_eq!(join_prefix("ug_fixture", "fixturex"), "ug_fixture_fixturex");
        assert_eq!(join_prefix("ug_fixture", "counter"), "ug_fixture_counter");
        assert_eq!(
            join_prefix("ug_fixture", "fx_sum_values"),
            "ug_fixture_fx_sum_values"
        );
        assert_eq!(strip_prefix("ug_cuda_rt", "cuda_malloc"), "malloc");
        assert_eq!(strip_prefix("ug_cuda_rt", "ug_cuda_rt_init"), "init");
        assert_eq!(strip_prefix("ug_fixture", "make_counter"), "make_counter");
    }

    #[test]
    fn snake_case_of_handle_names() {
        assert_eq!(snake_case("Counter"), "counter");
        assert_eq!(snake_case("CudaStream"), "cuda_stream");
        assert_eq!(snake_case("HTTPServer"), "http_server");
        assert_eq!(snake_case("Buffer2D"), "buffer2_d");
    }
}
