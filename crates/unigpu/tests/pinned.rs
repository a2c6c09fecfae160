//! Pinned host buffers on every backend: random data through
//! upload_pinned → op → download_pinned, every element checked; host
//! access waits for pending copies; length and backend mismatches refused.

mod common;

use common::{assert_same, random_len, random_vec};
use unigpu::{Backend, Error};

on_every_backend!(pinned_round_trips_keep_every_element, |ctx| {
    for n in [0, 1, random_len(5000), (8 << 20) / 4 + random_len(1000)] {
        let host = random_vec::<f32>(n);
        let mut src = ctx.pinned::<f32>(n).unwrap();
        assert_eq!(src.len(), n);
        assert!(src.as_slice().unwrap().iter().all(|&x| x == 0.0), "zeroed");
        src.as_mut_slice().unwrap().copy_from_slice(&host);
        let s = ctx.create_stream().unwrap();
        let mut a = ctx.alloc::<f32>(n).unwrap();
        s.upload_pinned(&src, &mut a).unwrap();
        ctx.ops_on(&s).scale(3.0, &mut a).unwrap();
        let mut dst = ctx.pinned::<f32>(n).unwrap();
        s.download_pinned(&a, &mut dst).unwrap();
        // No sync: `as_slice` waits for the download.
        let want: Vec<f32> = host.iter().map(|x| x * 3.0).collect();
        assert_same(&want, dst.as_slice().unwrap());
        // Writing the source waits for the upload; the array keeps what
        // was uploaded before.
        src.as_mut_slice().unwrap().fill(7.0);
        assert_same(&want, &a.download().unwrap());
    }
});

on_every_backend!(pinned_copies_check_lengths_and_backends, |ctx| {
    let s = ctx.create_stream().unwrap();
    let p = ctx.pinned::<f32>(10).unwrap();
    let mut a = ctx.zeros::<f32>(11).unwrap();
    match s.upload_pinned(&p, &mut a) {
        Err(Error::SizeMismatch { .. }) => {}
        other => panic!("upload of 10 into 11: {other:?}"),
    }
    let mut q = ctx.pinned::<f32>(12).unwrap();
    match s.download_pinned(&a, &mut q) {
        Err(Error::SizeMismatch { .. }) => {}
        other => panic!("download of 11 into 12: {other:?}"),
    }
    if ctx.backend() != Backend::Cpu {
        // A CPU context's pinned buffer on a GPU stream is refused.
        let cpu = common::cpu_ctx();
        let foreign = cpu.pinned::<f32>(11).unwrap();
        match s.upload_pinned(&foreign, &mut a) {
            Err(Error::ContextMismatch { .. }) => {}
            other => panic!(
                "a CPU pinned buffer on a {} stream: {other:?}",
                ctx.backend()
            ),
        }
    }
});

on_every_backend!(copies_of_pinned_slices_end_before_returning, |ctx| {
    // `upload` and `download_into` given a slice of a pinned buffer move
    // it by a direct DMA on CUDA, which is asynchronous; the calls must
    // still keep their contract: the source may be reused, and the
    // destination holds the data, once they return. A stream held back by
    // a host function makes a copy that returned too early show.
    for n in [1 + random_len(1000), (8 << 20) / 4 + random_len(1000)] {
        let host = random_vec::<f32>(n);
        let mut src = ctx.pinned::<f32>(n).unwrap();
        src.as_mut_slice().unwrap().copy_from_slice(&host);
        let s = ctx.create_stream().unwrap();
        s.host_fn(|| std::thread::sleep(std::time::Duration::from_millis(50)))
            .unwrap();
        let mut a = ctx.alloc::<f32>(n).unwrap();
        s.upload(src.as_slice().unwrap(), &mut a).unwrap();
        src.as_mut_slice().unwrap().fill(-5.0);
        ctx.ops_on(&s).scale(2.0, &mut a).unwrap();
        let mut dst = ctx.pinned::<f32>(n).unwrap();
        s.host_fn(|| std::thread::sleep(std::time::Duration::from_millis(50)))
            .unwrap();
        s.download_into(&a, dst.as_mut_slice().unwrap()).unwrap();
        let want: Vec<f32> = host.iter().map(|x| x * 2.0).collect();
        assert_same(&want, dst.as_slice().unwrap());
    }
});

on_every_backend!(
    writing_a_pinned_source_waits_for_its_pending_upload,
    |ctx| {
        let _parked = common::park_lock();
        // The stream is held back by a host function until another thread
        // opens it, 200 ms on; meanwhile the test overwrites the source. The
        // upload must still deliver what the source held when it was enqueued:
        // on CUDA upload_pinned returns at once and as_mut_slice waits for the
        // copy; on the CPU and torch backends the copy takes the data before
        // upload_pinned returns.
        let n = 1 + random_len(1 << 16);
        let host = random_vec::<f32>(n);
        let mut src = ctx.pinned::<f32>(n).unwrap();
        src.as_mut_slice().unwrap().copy_from_slice(&host);
        let s = ctx.create_stream().unwrap();
        let mut a = ctx.zeros::<f32>(n).unwrap();
        let (open, gate) = std::sync::mpsc::channel::<()>();
        s.host_fn(move || {
            let _ = gate.recv_timeout(std::time::Duration::from_secs(30));
        })
        .unwrap();
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let _ = open.send(());
        });
        s.upload_pinned(&src, &mut a).unwrap();
        src.as_mut_slice().unwrap().fill(7.0);
        s.sync().unwrap();
        opener.join().unwrap();
        assert_same(&host, &a.download().unwrap());
    }
);
