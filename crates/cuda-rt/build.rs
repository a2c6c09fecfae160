//! With feature `cuda`: compiles the generated tier-1 bridge of
//! specs/cuda_rt.yaml against the CUDA runtime headers and links libcudart.
//! Without it: nothing (the crate is empty), so the workspace builds on
//! machines without CUDA.
//!
//! CUDA location, first found: `UNIGPU_CUDA_HOME`, `CUDA_HOME`, `CUDA_PATH`,
//! `/usr/local/cuda`. Headers in `<home>/include`, the library in
//! `<home>/lib64` or `<home>/lib` (the pip wheel layout,
//! `site-packages/nvidia/cu13`, has `include/` and `lib/`).

fn main() {
    println!("cargo:rerun-if-env-changed=UNIGPU_CUDA_HOME");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    println!("cargo:rerun-if-env-changed=CUDA_PATH");
    #[cfg(feature = "cuda")]
    if let Err(message) = cuda::build() {
        // A build script reports configuration errors by failing with a message.
        eprintln!("error: {message}");
        println!("cargo:warning={message}");
        std::process::exit(1);
    }
}

#[cfg(feature = "cuda")]
mod cuda {
    use std::path::{Path, PathBuf};

    fn home() -> Result<PathBuf, String> {
        let candidates: Vec<PathBuf> = ["UNIGPU_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
            .chain(std::iter::once(PathBuf::from("/usr/local/cuda")))
            .collect();
        candidates
            .iter()
            .find(|h| h.join("include/cuda_runtime.h").is_file())
            .cloned()
            .ok_or_else(|| {
                format!(
                    "unigpu-cuda-rt (feature `cuda`) needs the CUDA runtime headers: no cuda_runtime.h under {}; \
                     set UNIGPU_CUDA_HOME to a CUDA install or to site-packages/nvidia/cu13 of the \
                     nvidia-cuda-runtime and nvidia-cuda-crt wheels (.ci/gen-tests.sh shows how)",
                    candidates.iter().map(|c| format!("{}/include", c.display())).collect::<Vec<_>>().join(", ")
                )
            })
    }

    /// The library directory and the link name for libcudart.
    fn cudart(home: &Path) -> Result<(PathBuf, String), String> {
        for dir in ["lib64", "lib", "lib/x64"] {
            let d = home.join(dir);
            if d.join("libcudart.so").exists() {
                return Ok((d, "dylib=cudart".into()));
            }
            // Wheels ship only the versioned name.
            let versioned = std::fs::read_dir(&d).ok().and_then(|entries| {
                let mut names: Vec<String> = entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.starts_with("libcudart.so."))
                    .collect();
                names.sort_by_key(|n| n.len());
                names.into_iter().next()
            });
            if let Some(name) = versioned {
                return Ok((d, format!("dylib:+verbatim={name}")));
            }
        }
        Err(format!(
            "no libcudart.so under {}/lib64 or {}/lib",
            home.display(),
            home.display()
        ))
    }

    pub fn build() -> Result<(), String> {
        let manifest = PathBuf::from(
            std::env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR unset")?,
        );
        let root = manifest.join("../..");
        let home = home()?;
        let (libdir, link) = cudart(&home)?;
        let include = home.join("include");
        cxx_build::bridge("src/generated/bridge.rs")
            .file(root.join("bridge/cuda_rt/cuda_rt_bridge.cc"))
            .include(root.join("bridge"))
            // -isystem: warnings inside CUDA's own headers are not ours.
            .flag("-isystem")
            .flag(include.to_string_lossy().as_ref())
            .std("c++17")
            .flag_if_supported("-Wall")
            .flag_if_supported("-Wextra")
            .warnings_into_errors(true)
            .compile("unigpu_cuda_rt_cpp");
        println!("cargo:rustc-link-search=native={}", libdir.display());
        println!("cargo:rustc-link-lib={link}");
        println!("cargo:rustc-env=UNIGPU_CUDA_RT_LIBDIR={}", libdir.display());
        for path in [
            "src/generated/bridge.rs",
            "../../bridge/cuda_rt/cuda_rt_bridge.cc",
            "../../bridge/cuda_rt/cuda_rt_bridge.h",
            "../../bridge/cuda_rt/cuda_rt_support.h",
        ] {
            println!("cargo:rerun-if-changed={path}");
        }
        Ok(())
    }
}
