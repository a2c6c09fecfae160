//! Inputs the fuzz targets (fuzz/, docs/fuzzing.md) found in the facade,
//! kept as tests with the input inline.

use unigpu::{Backend, Context, Error};

/// Found by `capi_calls` (`ug_pinned_new(ctx, UG_DTYPE_F32, 1 << 50, &out)`
/// on the CPU backend): the host pinned buffer reserved its memory without
/// the CPU backend's check against the available memory. A request past
/// what the allocator can map aborted the process (under ASan), and one
/// past the free memory but within overcommit would be zero-filled until
/// the OOM killer came. Now both are `OutOfMemory`, naming the free bytes.
#[test]
fn a_pinned_buffer_larger_than_host_memory_is_out_of_memory() {
    let ctx = Context::new(Backend::Cpu, 0).unwrap();
    let total = ctx.memory_info().unwrap().total;
    // (Not "total + 1 GiB": were the bug back, that request could be
    // granted by overcommit and zero-filled until the OOM killer came.)
    let len = 1usize << 50;
    match ctx.pinned::<f32>(len) {
        Err(Error::OutOfMemory { requested, free }) => {
            assert_eq!(requested, len * 4);
            // The old path reported `free: 0`: it never looked.
            assert!(free > 0 && free <= total, "free {free}, total {total}");
        }
        other => panic!("pinned::<f32>({len}): {other:?}"),
    }
    // A byte count that overflows is refused the same way.
    assert!(matches!(
        ctx.pinned::<f64>(usize::MAX / 4),
        Err(Error::OutOfMemory { .. })
    ));
    // The context is still usable.
    let p = ctx.pinned::<f32>(16).unwrap();
    assert!(p.as_slice().unwrap().iter().all(|&x| x == 0.0));
}
