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

/// Found by `capi_calls` as a hang: `ug_array_to_dlpack(a, -1, &t)`,
/// `ug_array_from_dlpack(ctx, t, &b)`, then `ug_op_tanh(NULL, b, a)`. An
/// array's own export imported again shares the array's memory and lock,
/// so the job locked it for reading and then for writing, and never
/// finished; freeing the context then hung joining its stream's worker.
/// Such a pair is now refused by every call that writes one of them while
/// it uses the other (`Unsupported`); reading both stays fine.
#[test]
fn an_array_and_its_dlpack_reimport_cannot_be_read_and_written_by_one_call() {
    // The bug was a hang: fail after a minute instead.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        reimport_pair();
        done.send(()).ok();
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the calls did not finish (or panicked)");
}

fn reimport_pair() {
    use unigpu::{DlpackSync, GpuArray, Kernel};

    let ctx = Context::new(Backend::Cpu, 0).unwrap();
    let host = [1.0f32, -2.0, 3.0, -4.0];
    let mut a = ctx.upload(&host).unwrap();
    let t = a.to_dlpack(DlpackSync::Unordered).unwrap();
    let b = GpuArray::<f32>::from_dlpack(&ctx, t).unwrap();
    let ops = ctx.ops();
    let refused = |what: &str, r: unigpu::Result<()>| match r {
        Err(Error::Unsupported { what: w, .. }) => {
            assert!(w.contains("shares its memory"), "{what}: {w}")
        }
        other => panic!("{what}: {other:?}"),
    };
    refused("tanh", ops.tanh(&b, &mut a));
    refused("add", ops.add(&b, &b, &mut a));
    refused("axpy", ops.axpy(2.0, &b, &mut a));
    refused("matmul", ops.matmul(&b, &b, &mut a, (2, 2, 2)));
    refused("copy", b.copy_to(&mut a));
    let k = Kernel::cpu_only("k", None, |_| Ok(()));
    refused(
        "launch",
        ctx.launch(&k, unigpu::Grid::for_elems(4), (&b, &mut a)),
    );
    // Reading both is fine, and nothing was changed or left hanging.
    let mut c = ctx.zeros::<f32>(4).unwrap();
    ops.add(&a, &b, &mut c).unwrap();
    assert_eq!(ops.dot(&a, &b).unwrap(), 30.0);
    ctx.sync().unwrap();
    assert_eq!(c.download().unwrap(), [2.0, -4.0, 6.0, -8.0]);
    assert_eq!(a.download().unwrap(), host);
    drop((a, b, c));
}
