//! Builds the fixture C++ library (tests/fixtures/counter) and its generated
//! tier-1 bridge (bridge/fixture) with cxx-build.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest.join("../..");
    let fixture = root.join("tests/fixtures/counter");
    let bridge = root.join("bridge");
    cxx_build::bridge("src/generated/bridge.rs")
        .file(bridge.join("fixture/fixture_bridge.cc"))
        .file(fixture.join("counter.cpp"))
        .include(&bridge)
        .include(&fixture)
        .std("c++17")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .warnings_into_errors(true)
        .compile("unigpu_gen_fixture_cpp");
    for path in [
        "src/generated/bridge.rs",
        "../../bridge/fixture/fixture_bridge.cc",
        "../../bridge/fixture/fixture_bridge.h",
        "../../tests/fixtures/counter/counter.cpp",
        "../../tests/fixtures/counter/counter.hpp",
    ] {
        println!("cargo:rerun-if-changed={path}");
    }
}
