//! A kernel that faults: the error comes back at the next sync and names
//! the kernel. A fault poisons the CUDA context for the whole process, so
//! this binary holds this one test only.

mod common;

use unigpu::{Error, Grid};

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_illegal_address_is_reported_at_sync_with_the_kernel_name() {
    let ctx = common::cuda_ctx();
    let src = r#"
extern "C" __global__ void writes_wild(float* y, unsigned long long offset) {
    y[offset] = 1.0f;
}"#;
    let k = ctx.compile(src).unwrap().kernel("writes_wild").unwrap();
    let mut y = ctx.zeros::<f32>(4).unwrap();
    ctx.launch(&k, Grid::for_elems(1), (&mut y, 1u64 << 40))
        .unwrap();
    match ctx.sync() {
        Err(Error::Driver { call, name, .. }) => {
            assert!(call.contains("writes_wild"), "{call}");
            assert!(name.contains("ILLEGAL_ADDRESS"), "{name}");
        }
        other => panic!("expected an illegal-address error, got {other:?}"),
    }
}
