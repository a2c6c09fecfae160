//! `cargo xtask gen`'s front end on any text: parse + validate a YAML
//! wrapper spec (xtask/src/lib.rs, as `gen` does).
//!
//! Properties: never a panic; a spec that is rejected gets at least one
//! error, and every error carries a position inside the text (1-based line
//! and column), the spec's file name, a message and a hint.

#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "specs/fuzz.yaml";

fuzz_target!(|data: &[u8]| {
    // `gen` reads specs with `read_to_string`, which rejects non-UTF-8
    // before the front end sees it; lossy text still reaches every path.
    let text = String::from_utf8_lossy(data);
    let Err(errors) = xtask::load_str(FILE, &text) else {
        return;
    };
    assert!(!errors.is_empty(), "a rejected spec with no error");
    // YAML ends a line at `\n`, `\r\n` or a lone `\r`; a position may
    // name the line after the last one (the end of input).
    let breaks = text.replace("\r\n", "\n").matches(['\n', '\r']).count() as u64;
    let lines = breaks + 2;
    for e in &errors {
        assert_eq!(e.file, FILE, "{e}");
        assert!(
            e.line >= 1 && e.column >= 1,
            "an error without a position: {e}"
        );
        assert!(
            e.line <= lines,
            "an error past the end of the text ({lines} lines): {e}"
        );
        assert!(
            !e.message.trim().is_empty(),
            "an error without a message: {e}"
        );
        assert!(!e.hint.trim().is_empty(), "an error without a hint: {e}");
    }
});
