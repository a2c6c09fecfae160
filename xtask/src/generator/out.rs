//! A tiny line writer that knows its line number (for `#line` directives).

/// Accumulates generated text line by line.
#[derive(Debug, Default)]
pub struct Out {
    text: String,
    lines: u64,
}

impl Out {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one line (a trailing newline is added). `s` may itself
    /// contain newlines; they are counted.
    pub fn line(&mut self, s: impl AsRef<str>) {
        let s = s.as_ref();
        self.lines += s.matches('\n').count() as u64 + 1;
        self.text.push_str(s);
        self.text.push('\n');
    }

    /// Appends an empty line.
    pub fn blank(&mut self) {
        self.line("");
    }

    /// The 1-based number of the next line to be written.
    pub fn next_line(&self) -> u64 {
        self.lines + 1
    }

    pub fn finish(self) -> String {
        self.text
    }
}

/// `w!(out, "fmt", args…)` writes one formatted line.
macro_rules! w {
    ($out:expr) => { $out.blank() };
    ($out:expr, $($arg:tt)*) => { $out.line(format!($($arg)*)) };
}
pub(crate) use w;

/// Writes `doc` as comment lines with the given leader (`///`, `//!`, `//`).
/// In Rust doc comments, a code fence without a language becomes `text`, so
/// that a spec's example never turns into a doctest.
pub fn doc_lines(out: &mut Out, indent: &str, leader: &str, doc: &str) {
    let rustdoc = leader == "///" || leader == "//!";
    let mut in_fence = false;
    for l in doc.lines() {
        let mut l = l.trim_end().to_string();
        if rustdoc && l.trim_start().starts_with("```") {
            if !in_fence && l.trim() == "```" {
                l = l.replace("```", "```text");
            }
            in_fence = !in_fence;
        }
        if l.trim().is_empty() {
            out.line(format!("{indent}{leader}"));
        } else {
            out.line(format!("{indent}{leader} {l}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_doc_fences_never_become_doctests() {
        let mut o = Out::new();
        doc_lines(
            &mut o,
            "",
            "///",
            "Example:\n```\nlet x = 1;\n```\n```c\nint y;\n```",
        );
        assert_eq!(
            o.finish(),
            "/// Example:\n/// ```text\n/// let x = 1;\n/// ```\n/// ```c\n/// int y;\n/// ```\n"
        );
        let mut o = Out::new();
        doc_lines(&mut o, "", "//", "```\nx\n```");
        assert_eq!(o.finish(), "// ```\n// x\n// ```\n");
    }
}
