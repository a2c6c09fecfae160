//! Every error the macro gives, with its span (tests/ui/*.stderr). The
//! cases use this crate alone: an erroneous kernel expands to nothing but
//! `compile_error!`, so no unigpu code is needed to build them.

#[test]
fn errors() {
    trybuild::TestCases::new().compile_fail("tests/ui/*.rs");
}
