//! With feature `torch`: compiles the generated c10 bridge (specs/torch.yaml)
//! against the libtorch headers that unigpu-torch-sys (tch's torch-sys)
//! found, so both use one libtorch. Linking libtorch is torch-sys's job; the
//! bridge needs nothing CUDA-specific at link time (torch_support.h).

fn main() {
    println!("cargo:rerun-if-changed=src/generated/bridge.rs");
    println!("cargo:rerun-if-changed=../../bridge/torch/torch_bridge.cc");
    println!("cargo:rerun-if-changed=../../bridge/torch/torch_bridge.h");
    println!("cargo:rerun-if-changed=../../bridge/torch/torch_support.h");
    #[cfg(feature = "torch")]
    if let Err(message) = torch::build() {
        eprintln!("error: {message}");
        println!("cargo:warning={message}");
        std::process::exit(1);
    }
}

#[cfg(feature = "torch")]
mod torch {
    use std::path::PathBuf;

    pub fn build() -> Result<(), String> {
        let include = std::env::var("DEP_UNIGPU_TORCH_INCLUDE")
            .map(PathBuf::from)
            .map_err(|_| "unigpu-torch-sys did not report libtorch's include folder".to_string())?;
        if !include.join("ATen/ATen.h").is_file() {
            return Err(format!(
                "no ATen/ATen.h under {}: point LIBTORCH at a libtorch, or set LIBTORCH_USE_PYTORCH=1 \
                 with the Python that has torch first on PATH",
                include.display()
            ));
        }
        let manifest = PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR unset")?,
        );
        let root = manifest.join("../..");
        cxx_build::bridge("src/generated/bridge.rs")
            .file(root.join("bridge/torch/torch_bridge.cc"))
            .include(root.join("bridge"))
            // -isystem: warnings inside libtorch's headers are not ours.
            .flag("-isystem")
            .flag(include.to_string_lossy().as_ref())
            .flag("-isystem")
            .flag(
                include
                    .join("torch/csrc/api/include")
                    .to_string_lossy()
                    .as_ref(),
            )
            .std("c++17")
            .flag_if_supported("-Wall")
            .flag_if_supported("-Wextra")
            .flag_if_supported("-Wno-interference-size")
            .define("_GLIBCXX_USE_CXX11_ABI", "1")
            .warnings_into_errors(true)
            .compile("unigpu_torch_bridge_cpp");
        println!("cargo:rustc-link-lib=dylib=c10");
        println!("cargo:rustc-link-lib=dylib=torch_cpu");
        Ok(())
    }
}
