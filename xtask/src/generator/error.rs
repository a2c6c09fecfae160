//! Spec errors: every problem found in a spec, with `file:line:column` and a hint.

use std::fmt;

/// One problem in a spec file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The spec file, as given on the command line or relative to the repository root.
    pub file: String,
    /// 1-based line; 0 when the position is unknown.
    pub line: u64,
    /// 1-based column; 0 when the position is unknown.
    pub column: u64,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}\n  hint: {}",
            self.file, self.line, self.column, self.message, self.hint
        )
    }
}

/// All problems found in one or more specs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecErrors(pub Vec<SpecError>);

impl fmt::Display for SpecErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        write!(
            f,
            "\n{} error(s) in spec(s); nothing was written",
            self.0.len()
        )
    }
}

impl std::error::Error for SpecErrors {}
