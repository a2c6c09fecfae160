//! Two devices through the safe layer: copies between them, direct and
//! staged through page-locked memory, ordered on both sides; collectives
//! on another library's streams and memory (`ForeignPart`, `ForeignP2p`);
//! and an NCCL communicator whose other rank never arrives, which must
//! time out and abort, not hang.
//!
//! Ignored unless asked for; each fails, never skips, on a machine with
//! fewer GPUs than it needs (.ci/gpu-tests-fail-without-gpu.sh checks).
//! NCCL runs only with `NCCL_NVLS_ENABLE=0` (bench/runners/run_multi_gpu.sh sets
//! it): NVLink multicast can take a shared host's GPUs out of service.

use std::time::{Duration, Instant};

use rand::Rng;
use unigpu_cuda_safe::nccl::{ForeignMemory, ForeignP2p, ForeignPart, NcclComm, NcclId, ReduceOp};
use unigpu_cuda_safe::{
    CudaDevice, CudaStreamHandle, DeviceBuffer, ForeignStream, PeerPath, SafeError, device_count,
};

fn two_devices() -> (CudaDevice, CudaDevice) {
    let n = device_count()
        .unwrap_or_else(|e| panic!("this test needs two CUDA GPUs and found none: {e}"));
    assert!(n >= 2, "this test needs two CUDA GPUs and found {n}");
    (CudaDevice::open(0).unwrap(), CudaDevice::open(1).unwrap())
}

fn nvls_off() {
    assert_eq!(
        std::env::var("NCCL_NVLS_ENABLE").as_deref(),
        Ok("0"),
        "run NCCL tests with NCCL_NVLS_ENABLE=0 (bench/runners/run_multi_gpu.sh does): NVLink multicast \
         can take a shared host's GPUs out of service"
    );
}

fn random(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-1e3..1e3)).collect()
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_copies_between_devices_direct_and_staged_in_both_directions() {
    let (a, b) = two_devices();
    let direct = a.can_access_peer(&b).unwrap() && b.can_access_peer(&a).unwrap();
    println!("peer access 0<->1: {direct}");
    let (sa, sb) = (
        CudaStreamHandle::new(&a).unwrap(),
        CudaStreamHandle::new(&b).unwrap(),
    );
    // Sizes around the staging slot (8 MiB of f32 is 2 Mi elements).
    for n in [0, 1, 4099, (2 << 20) + 17, 5 << 20] {
        for staged in [false, true] {
            let host = random(n);
            let src = DeviceBuffer::from_host(&sa, &host).unwrap();
            let mut dst = DeviceBuffer::<f32>::zeros(&sb, n).unwrap();
            let path = src.copy_to_device(&sa, &mut dst, &sb, staged).unwrap();
            let expected = if staged || !direct {
                PeerPath::Staged
            } else {
                PeerPath::Direct
            };
            assert_eq!(path, expected, "n = {n}");
            // Read back on a third stream: ordered after the copy by the
            // buffer's use record alone.
            let reader = CudaStreamHandle::new(&b).unwrap();
            assert_eq!(
                dst.to_host(&reader).unwrap(),
                host,
                "0 -> 1, n = {n}, staged = {staged}"
            );
            // And back, into a buffer the source device still reads.
            let mut back = DeviceBuffer::<f32>::zeros(&sa, n).unwrap();
            dst.copy_to_device(&sb, &mut back, &sa, staged).unwrap();
            assert_eq!(
                back.to_host(&sa).unwrap(),
                host,
                "1 -> 0, n = {n}, staged = {staged}"
            );
        }
    }
    // The source may be overwritten right after: the copy read it first.
    let first = random(1 << 20);
    let mut src = DeviceBuffer::from_host(&sa, &first).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeros(&sb, first.len()).unwrap();
    src.copy_to_device(&sa, &mut dst, &sb, true).unwrap();
    let other = CudaStreamHandle::new(&a).unwrap();
    src.write_from(&other, &random(1 << 20)).unwrap();
    assert_eq!(dst.to_host(&sb).unwrap(), first);
    a.synchronize().unwrap();
    b.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_rank_that_never_arrives_times_out_and_aborts() {
    let device = CudaDevice::open(0)
        .unwrap_or_else(|e| panic!("this test needs a CUDA GPU and found none: {e}"));
    nvls_off();
    let id = NcclId::new().expect("libnccl");
    let timeout = Duration::from_secs(3);
    let start = Instant::now();
    // A world of two, and rank 1 never comes.
    let e = NcclComm::init(std::slice::from_ref(&device), &id, 2, 0, timeout).unwrap_err();
    let took = start.elapsed();
    match &e {
        SafeError::Timeout { what, after } => {
            assert_eq!(*after, timeout);
            assert!(what.contains("aborted"), "{what}");
        }
        other => panic!("expected a timeout, got {other}"),
    }
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(30),
        "took {took:?}"
    );
    // The device is still usable, and nothing was left in its error slot.
    let s = CudaStreamHandle::new(&device).unwrap();
    let x = DeviceBuffer::from_host(&s, &[1.0f32, 2.0]).unwrap();
    assert_eq!(x.to_host(&s).unwrap(), vec![1.0, 2.0]);
    device.synchronize().unwrap();
}

/// Another library's view of `buffer` on `stream`: its stream by handle,
/// its memory by address (as torch's tensors reach NCCL).
fn foreign(
    stream: &CudaStreamHandle,
    buffer: &DeviceBuffer<f32>,
) -> (ForeignStream, ForeignMemory<f32>) {
    // SAFETY: the stream and buffer outlive every use below (the test
    // syncs the devices before dropping them), and every use is on this
    // stream, the one that wrote the buffer.
    unsafe {
        (
            ForeignStream::from_raw(stream.device(), stream.raw()),
            ForeignMemory::from_raw(buffer.device_address(), buffer.len()),
        )
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_gpus_collectives_on_foreign_streams_and_memory_match_the_host() {
    let (a, b) = two_devices();
    nvls_off();
    let comm = NcclComm::init(
        &[a.clone(), b.clone()],
        &NcclId::new().expect("libnccl"),
        2,
        0,
        Duration::from_secs(60),
    )
    .unwrap();
    let streams = [
        CudaStreamHandle::new(&a).unwrap(),
        CudaStreamHandle::new(&b).unwrap(),
    ];
    let n = 100_003;
    let data = [random(n), random(n)];
    let bufs: Vec<DeviceBuffer<f32>> = streams
        .iter()
        .zip(&data)
        .map(|(s, d)| DeviceBuffer::from_host(s, d).unwrap())
        .collect();
    let views: Vec<_> = streams
        .iter()
        .zip(&bufs)
        .map(|(s, b)| foreign(s, b))
        .collect();

    // All-reduce (max: exact in any order) in place.
    let mut parts: Vec<ForeignPart<'_, f32>> = views
        .iter()
        .map(|(s, m)| ForeignPart {
            stream: s,
            send: None,
            recv: *m,
        })
        .collect();
    comm.all_reduce(&mut parts, ReduceOp::Max).unwrap();
    let expected: Vec<f32> = (0..n).map(|i| data[0][i].max(data[1][i])).collect();
    for (r, (s, buf)) in streams.iter().zip(&bufs).enumerate() {
        assert_eq!(buf.to_host(s).unwrap(), expected, "all_reduce rank {r}");
    }

    // Swap through send/recv into fresh buffers.
    let fresh = [random(n), random(n)];
    let sends: Vec<DeviceBuffer<f32>> = streams
        .iter()
        .zip(&fresh)
        .map(|(s, d)| DeviceBuffer::from_host(s, d).unwrap())
        .collect();
    let recvs: Vec<DeviceBuffer<f32>> = streams
        .iter()
        .map(|s| DeviceBuffer::<f32>::zeros(s, n).unwrap())
        .collect();
    let send_views: Vec<_> = streams
        .iter()
        .zip(&sends)
        .map(|(s, b)| foreign(s, b))
        .collect();
    let recv_views: Vec<_> = streams
        .iter()
        .zip(&recvs)
        .map(|(s, b)| foreign(s, b))
        .collect();
    let mut ops = Vec::new();
    for r in 0..2 {
        ops.push(ForeignP2p::Send {
            local: r,
            stream: &send_views[r].0,
            memory: send_views[r].1,
            peer: 1 - r,
        });
        ops.push(ForeignP2p::Recv {
            local: r,
            stream: &recv_views[r].0,
            memory: recv_views[r].1,
            peer: 1 - r,
        });
    }
    comm.send_recv(&mut ops).unwrap();
    comm.wait(Duration::from_secs(60)).unwrap();
    for r in 0..2 {
        assert_eq!(
            recvs[r].to_host(&streams[r]).unwrap(),
            fresh[1 - r],
            "recv rank {r}"
        );
    }

    // A part on the wrong device is refused before anything is enqueued.
    let mut swapped: Vec<ForeignPart<'_, f32>> = views
        .iter()
        .rev()
        .map(|(s, m)| ForeignPart {
            stream: s,
            send: None,
            recv: *m,
        })
        .collect();
    let e = comm.all_reduce(&mut swapped, ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, SafeError::DeviceMismatch { .. }), "{e}");
    a.synchronize().unwrap();
    b.synchronize().unwrap();
}
