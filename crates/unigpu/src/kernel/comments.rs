//! C-style comments, which CUDA C++ and PTX share: the one scanner both
//! kernel-declaration readers (signature.rs, ptx.rs) skip them with.

use std::iter::Peekable;
use std::str::Chars;

/// After a `/` just taken from `chars`: if it opens a comment (`//` to the
/// end of the line, or `/* */`), consumes the comment and returns true. A
/// block comment leaves one space in `out`, as a compiler reads it.
pub(crate) fn skip_comment(chars: &mut Peekable<Chars<'_>>, out: &mut String) -> bool {
    match chars.peek() {
        Some('/') => {
            while chars.peek().is_some_and(|&c| c != '\n') {
                chars.next();
            }
            true
        }
        Some('*') => {
            chars.next();
            let mut prev = ' ';
            for c in chars.by_ref() {
                if prev == '*' && c == '/' {
                    break;
                }
                prev = c;
            }
            out.push(' ');
            true
        }
        _ => false,
    }
}
