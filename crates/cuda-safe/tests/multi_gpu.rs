//! Two devices through the safe layer: copies between them, direct and
//! staged through page-locked memory, ordered on both sides; and an NCCL
//! communicator whose other rank never arrives, which must time out and
//! abort, not hang.
//!
//! Ignored unless asked for; each fails, never skips, on a machine with
//! fewer GPUs than it needs (.ci/gpu-tests-fail-without-gpu.sh checks).
//! NCCL runs only with `NCCL_NVLS_ENABLE=0` (bench/runners/run_multi_gpu.sh sets
//! it): NVLink multicast can take a shared host's GPUs out of service.

use std::time::{Duration, Instant};

use rand::Rng;
use unigpu_cuda_safe::nccl::{NcclComm, NcclId};
use unigpu_cuda_safe::{
    CudaDevice, CudaStreamHandle, DeviceBuffer, PeerPath, SafeError, device_count,
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
