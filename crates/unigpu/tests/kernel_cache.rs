//! The on-disk kernel cache, seen from new processes: the test re-runs
//! itself with `UNIGPU_CACHE_DIR` pointing at a fresh folder, once per GPU
//! backend (the child is told which one).

mod common;

use unigpu::kernel::Origin;

const CHILD: &str = "UNIGPU_TEST_CACHE_CHILD";
const CHILD_BACKEND: &str = "UNIGPU_TEST_CACHE_BACKEND";
const SRC_PREFIX: &str = r#"
extern "C" __global__ void add_one(float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
"#;

/// Compiles and runs a kernel in this process, printing where it came from.
fn child() {
    let ctx = common::cuda_backend_ctx(&std::env::var(CHILD_BACKEND).unwrap());
    let tag = std::env::var(CHILD).unwrap();
    let module = ctx.compile(&format!("{SRC_PREFIX}// {tag}\n")).unwrap();
    let k = module.kernel("add_one").unwrap();
    let n = common::random_len(5000);
    let h = common::random_vec::<f32>(n);
    let mut y = ctx.upload(&h).unwrap();
    ctx.launch(&k, unigpu::Grid::for_elems(n), (&mut y, n as u32))
        .unwrap();
    let want: Vec<f32> = h.iter().map(|v| v + 1.0).collect();
    common::assert_same(&want, &y.download().unwrap());
    println!("origin={:?}", module.origin());
}

fn run_child(backend: &str, dir: &std::path::Path, tag: &str) -> String {
    let dir = dir.to_str().expect("a UTF-8 temp dir");
    let run = unigpu_test_support::child::rerun(
        &format!("disk_cache_serves_new_processes_{backend}"),
        &[
            ("UNIGPU_CACHE_DIR", dir),
            (CHILD, tag),
            (CHILD_BACKEND, backend),
        ],
    );
    run.assert_success().value("origin=").to_string()
}

fn disk_cache_serves_new_processes(backend: &str) {
    if std::env::var(CHILD).is_ok() {
        return child();
    }
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("{}", common::random_vec::<u64>(1)[0]);
    assert_eq!(
        run_child(backend, dir.path(), &tag),
        format!("{:?}", Origin::Compiled)
    );
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "one cache file written");
    assert_eq!(
        run_child(backend, dir.path(), &tag),
        format!("{:?}", Origin::DiskCache)
    );

    // A damaged file is a miss, not an error.
    let path = files[0].as_ref().unwrap().path();
    std::fs::write(&path, b"UGKCACH1 garbage").unwrap();
    assert_eq!(
        run_child(backend, dir.path(), &tag),
        format!("{:?}", Origin::Compiled)
    );
    assert_eq!(
        run_child(backend, dir.path(), &tag),
        format!("{:?}", Origin::DiskCache)
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn disk_cache_serves_new_processes_cuda() {
    disk_cache_serves_new_processes("cuda");
}

#[cfg(feature = "torch")]
#[test]
#[ignore = "needs a CUDA GPU"]
fn disk_cache_serves_new_processes_torch() {
    disk_cache_serves_new_processes("torch");
}
