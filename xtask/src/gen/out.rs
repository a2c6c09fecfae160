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

/// Writes `doc` as comment lines with the given leader (`///`, ` *`, `//`).
pub fn doc_lines(out: &mut Out, indent: &str, leader: &str, doc: &str) {
    for l in doc.lines() {
        if l.trim().is_empty() {
            out.line(format!("{indent}{leader}"));
        } else {
            out.line(format!("{indent}{leader} {}", l.trim_end()));
        }
    }
}
