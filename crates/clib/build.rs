//! Gives libunigpu.so the SONAME `libunigpu.so`, so that programs linked
//! against it by path (CMake's imported targets) record the name, not the
//! path, and find it through the usual search (rpath, LD_LIBRARY_PATH).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libunigpu.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
