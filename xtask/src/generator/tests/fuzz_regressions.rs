//! Inputs the `spec_yaml` fuzz target (fuzz/, docs/fuzzing.md) found, kept
//! as tests with the input inline.

use super::{MINI, load_err, load_ok};

/// Found by `spec_yaml`: YAML also ends a line at a lone `\r` (old Mac line
/// endings), and the parser's positions count such lines; the front end's
/// own line lookups used `str::lines`, which does not, so for such a file
/// `gen` pointed "spec file is not named after its library" at line 0 (no
/// position) instead of the `library:` line. That error now takes the
/// position the parser gave `library`, and the front end counts lines as
/// YAML does (`yaml_lines`).
#[test]
fn lone_carriage_returns_end_lines_as_in_yaml() {
    // The crash input, shortened: comments and an unknown key, CR-only.
    let text = "# The generator's\r\r\r fixture spec: binds tests/fixtures/counter\n# state\n";
    let errors = load_err(text);
    let e = &errors[0];
    assert!(e.message.contains("unknown field"), "{e}");
    assert_eq!((e.line, e.column), (4, 2), "{e}");
    assert_eq!(
        xtask::spec::yaml_lines(text).nth(3),
        Some(" fixture spec: binds tests/fixtures/counter")
    );

    // A valid spec with CR line endings, in a file named after another
    // library: the error points at the `library` line (line 2).
    let cr = format!("# a comment\n{MINI}").replace('\n', "\r");
    let spec = load_ok(&cr);
    let e = super::super::misnamed("specs/other.yaml", &spec).expect("misnamed");
    assert_eq!((e.line, e.column), (2, 1), "{e}");
    // Also where `library:` does not start a line.
    let flow = MINI.replace("library: mini\n", "{library: mini}\n");
    let indented = format!(
        "# c\n{}",
        MINI.replace("library: mini\n", "\"library\" : mini\n")
    );
    for text in [flow.as_str(), indented.as_str()] {
        if let Ok(spec) = super::load(text) {
            let e = super::super::misnamed("specs/other.yaml", &spec).expect("misnamed");
            assert!(e.line >= 1 && e.column >= 1, "{e}");
        }
    }
}
