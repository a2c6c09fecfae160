//! With feature `torch`: passes on where tch's torch-sys found libtorch, so
//! this crate can find libtorch_cuda at run time and the c10 bridge can
//! compile against the same headers (as `DEP_UNIGPU_TORCH_LIB` and
//! `DEP_UNIGPU_TORCH_INCLUDE`).

fn main() {
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    // Set by torch-sys's build script (`links = "tch"`, `cargo:libtorch_lib=`).
    let lib = std::env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    println!("cargo:rustc-env=UNIGPU_LIBTORCH_LIB={lib}");
    println!("cargo:lib={lib}");
    let include = std::path::Path::new(&lib).join("../include");
    println!("cargo:include={}", include.display());
}
