//! The promises of the CUDA RAII layer's `unsafe` blocks, checked on a GPU:
//! lengths (mismatches rejected before any copy, zero-length buffers work),
//! ordering across streams (a stream held back by a host-function gate,
//! so a missing wait is seen as wrong data or an early finish), drop with
//! pending work (the device's error slot stays clean, the memory is
//! reusable and no pending read sees it reused), events, foreign streams
//! over a raw handle, and the DLPack lease and deleter.
//!
//! Every test is ignored unless asked for (`--ignored`) and fails, never
//! skips, when no GPU is found: CI checks that each fails with the no-GPU
//! message (.ci/gpu-tests-fail-without-gpu.sh).

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use rand::Rng;
use unigpu_core::dlpack::ffi::*;
use unigpu_core::dlpack::{ManagedTensor, dtype_of};
use unigpu_cuda_safe::{
    BufferArg, CudaDevice, CudaEventHandle, CudaModuleHandle, CudaStreamHandle, DeviceBuffer,
    ForeignStream, KernelParam, LaunchDims, ManagedLocation, PinnedBuffer, SafeError, launch,
    nvrtc,
};

/// How long a gate holds its stream at most, so a failing test never hangs
/// the run (the test thread releases it long before).
const GATE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the test waits to see that gated work did not finish early.
const HOLD: Duration = Duration::from_millis(200);

fn device() -> CudaDevice {
    CudaDevice::open(0).unwrap_or_else(|e| panic!("this test needs a CUDA GPU and found none: {e}"))
}

/// CUDA runs every host function of a process on one driver thread, so two
/// gated tests at once would wait on each other, and a `synchronize` of the
/// shared primary context waits for every test's streams: one test at a time.
///
/// The guard is also the leak check: the driver's free memory, read through
/// a witness device opened once per process (it keeps the primary context,
/// so every reading sees the same driver context), must be back where it
/// was when the test's devices, buffers, streams, events and modules are
/// gone, within one 2 MiB page (`cuMemGetInfo`'s grain). Every test takes
/// it first, so it drops last.
fn serial() -> Serial {
    static LOCK: Mutex<()> = Mutex::new(());
    let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let free_before = driver_free();
    Serial {
        _lock: lock,
        free_before,
    }
}

struct Serial {
    _lock: MutexGuard<'static, ()>,
    free_before: usize,
}

/// What `cuMemGetInfo` may move by for no leak of the test's: one page.
const DRIVER_SLACK: usize = 2 << 20;

fn driver_free() -> usize {
    static WITNESS: OnceLock<CudaDevice> = OnceLock::new();
    let w = WITNESS.get_or_init(|| {
        let w = device();
        // The first managed allocation of a process makes the driver set
        // up about 120 MiB of state for it (seen on an H100), kept until
        // the process ends: made here, before any test's first reading.
        let s = w.default_stream();
        drop(DeviceBuffer::<u8>::managed(&s, 1).expect("cuMemAllocManaged"));
        w
    });
    w.synchronize().expect("the witness device synchronizes");
    w.memory_info().expect("cuMemGetInfo").0
}

impl Drop for Serial {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // the test's own failure is the one to report
        }
        let after = driver_free();
        assert!(
            after + DRIVER_SLACK >= self.free_before,
            "leak: the driver reports {after} bytes free after the test, {} before ({} MiB less)",
            self.free_before,
            (self.free_before - after) >> 20
        );
    }
}

/// Holds a stream at a host function until released or dropped (dropping
/// releases it too, so a panicking test does not leave the stream parked).
struct Gate(Option<mpsc::Sender<()>>);

impl Gate {
    fn on(stream: &CudaStreamHandle) -> Gate {
        let (tx, rx) = mpsc::channel::<()>();
        stream
            .host_fn(move || {
                let _ = rx.recv_timeout(GATE_TIMEOUT);
            })
            .expect("cuLaunchHostFunc");
        Gate(Some(tx))
    }

    fn on_foreign(stream: &ForeignStream) -> Gate {
        let (tx, rx) = mpsc::channel::<()>();
        stream
            .host_fn(move || {
                let _ = rx.recv_timeout(GATE_TIMEOUT);
            })
            .expect("cuLaunchHostFunc");
        Gate(Some(tx))
    }

    fn release(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        self.release();
    }
}

fn random_f32(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-1e3f32..1e3)).collect()
}

fn assert_same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: element {i} of {}", want.len());
    }
}

fn assert_size_mismatch<T: std::fmt::Debug>(
    r: Result<T, SafeError>,
    what: &str,
    expected: usize,
    actual: usize,
) {
    match r {
        Err(SafeError::SizeMismatch {
            what: w,
            expected: e,
            actual: a,
        }) => {
            assert_eq!((w, e, a), (what, expected, actual), "size mismatch fields");
        }
        other => panic!(
            "{what} with {actual} elements for {expected}: expected SizeMismatch, got {other:?}"
        ),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn size_mismatches_are_rejected_and_leave_the_buffer_unchanged() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    let n = 1000 + rand::rng().random_range(0..1000);
    let data = random_f32(n);
    let mut buf = DeviceBuffer::from_host(&s, &data).unwrap();

    for wrong in [0, n - 1, n + 1] {
        assert_size_mismatch(buf.write_from(&s, &vec![7.0; wrong]), "upload", n, wrong);
        let mut host = vec![0.0f32; wrong];
        assert_size_mismatch(buf.read_into(&s, &mut host), "download", n, wrong);
        let mut other = DeviceBuffer::<f32>::zeros(&s, wrong).unwrap();
        assert_size_mismatch(buf.copy_to(&s, &mut other), "copy_to", n, wrong);
        assert_same(
            &other.to_host(&s).unwrap(),
            &vec![0.0; wrong],
            "copy_to target after a rejected copy",
        );
    }
    // Nothing rejected above wrote anything.
    assert_same(
        &buf.to_host(&s).unwrap(),
        &data,
        "buffer after rejected calls",
    );
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn zero_length_buffers_work_everywhere() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    let mut a = DeviceBuffer::<f32>::alloc(&s, 0).unwrap();
    let mut z = DeviceBuffer::<f32>::zeros(&s, 0).unwrap();
    let h = DeviceBuffer::<f32>::from_host(&s, &[]).unwrap();
    for b in [&a, &z, &h] {
        assert!(b.is_empty());
        assert_eq!((b.len(), b.num_bytes()), (0, 0));
    }
    a.write_from(&s, &[]).unwrap();
    a.read_into(&s, &mut []).unwrap();
    assert!(h.to_host(&s).unwrap().is_empty());
    h.copy_to(&s, &mut z).unwrap();
    assert!(h.try_clone(&s).unwrap().is_empty());
    // SAFETY: zero bytes are copied, so the addresses are never touched.
    unsafe {
        h.copy_to_raw(&s, 0).unwrap();
        a.copy_from_raw(&s, 0).unwrap();
    }
    let (t, ready) = a.to_dlpack(&s).unwrap();
    ready.synchronize().unwrap();
    let back = DeviceBuffer::<f32>::from_dlpack(&s, t).unwrap();
    assert!(back.is_empty() && back.is_imported());
    drop((a, z, h, back));
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn round_trips_keep_every_element_of_every_type() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    let mut rng = rand::rng();
    let n = 4097;
    let f: Vec<f32> = random_f32(n);
    let d: Vec<f64> = (0..n).map(|_| rng.random()).collect();
    let h: Vec<half::f16> = f.iter().map(|&x| half::f16::from_f32(x)).collect();
    let b: Vec<half::bf16> = f.iter().map(|&x| half::bf16::from_f32(x)).collect();
    let i: Vec<i64> = (0..n).map(|_| rng.random()).collect();
    let u: Vec<u8> = (0..n).map(|_| rng.random()).collect();
    assert_same(
        &DeviceBuffer::from_host(&s, &f)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &f,
        "f32",
    );
    assert_same(
        &DeviceBuffer::from_host(&s, &d)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &d,
        "f64",
    );
    assert_same(
        &DeviceBuffer::from_host(&s, &h)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &h,
        "f16",
    );
    assert_same(
        &DeviceBuffer::from_host(&s, &b)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &b,
        "bf16",
    );
    assert_same(
        &DeviceBuffer::from_host(&s, &i)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &i,
        "i64",
    );
    assert_same(
        &DeviceBuffer::from_host(&s, &u)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &u,
        "u8",
    );
    // zeros really zeroes, after the pool handed back memory holding data.
    drop(DeviceBuffer::from_host(&s, &vec![u8::MAX; n]).unwrap());
    assert_same(
        &DeviceBuffer::<u8>::zeros(&s, n)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &vec![0u8; n],
        "zeros",
    );
    // try_clone and copy_to copy every element.
    let src = DeviceBuffer::from_host(&s, &f).unwrap();
    assert_same(
        &src.try_clone(&s).unwrap().to_host(&s).unwrap(),
        &f,
        "try_clone",
    );
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn impossible_allocations_are_out_of_memory_and_the_device_stays_usable() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    match DeviceBuffer::<u64>::alloc(&s, usize::MAX / 4) {
        Err(SafeError::OutOfMemory { requested, .. }) => assert_eq!(requested, usize::MAX),
        other => panic!("an overflowing size: expected OutOfMemory, got {other:?}"),
    }
    let (_, total) = dev.memory_info().unwrap();
    match DeviceBuffer::<u8>::alloc(&s, 2 * total) {
        Err(SafeError::OutOfMemory { requested, free }) => {
            assert_eq!(requested, 2 * total);
            assert!(free <= total, "free {free} > total {total}");
        }
        other => panic!("twice the device memory: expected OutOfMemory, got {other:?}"),
    }
    // A second failure right after the first still reports the driver's
    // true free bytes (the cache was emptied before the error).
    match DeviceBuffer::<u8>::alloc(&s, 2 * total) {
        Err(SafeError::OutOfMemory { free, .. }) => {
            let (now, _) = dev.memory_info().unwrap();
            assert!(
                free.abs_diff(now) < 256 << 20,
                "reported {free} bytes free, the driver says {now}"
            );
        }
        other => panic!("twice the device memory again: {other:?}"),
    }
    dev.synchronize().unwrap();
    let data = random_f32(1 << 16);
    assert_same(
        &DeviceBuffer::from_host(&s, &data)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &data,
        "after OOM",
    );
}

/// Managed buffers: zeroed, written and read in place from the host, the
/// host's reads wait for a copy held back behind a gate on another stream,
/// prefetch both ways, a request over the free bytes refused with them,
/// device buffers refused a host view, and drop with pending work clean.
#[test]
#[ignore = "needs a CUDA GPU"]
fn managed_buffers_are_host_views_ordered_after_device_work() {
    let _serial = serial();
    let dev = device();
    let (s1, s2) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let n = 1 << 20;
    let mut a = DeviceBuffer::<f32>::managed(&s1, n).unwrap();
    assert!(a.is_managed());
    assert!(
        a.managed_slice().unwrap().iter().all(|&v| v == 0.0),
        "zeroed"
    );
    let data = random_f32(n);
    a.managed_slice_mut().unwrap().copy_from_slice(&data);
    a.prefetch(&s1, ManagedLocation::Device).unwrap();
    let mut b = DeviceBuffer::<f32>::managed(&s1, n).unwrap();
    let mut gate = Gate::on(&s2);
    a.copy_to(&s2, &mut b).unwrap();
    b.prefetch(&s2, ManagedLocation::Host).unwrap();
    std::thread::sleep(HOLD);
    assert!(!s2.query().unwrap(), "the gated copy finished early");
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(HOLD);
        gate.release();
    });
    // Waits for the gated copy: never the zeroes.
    assert_same(b.managed_slice().unwrap(), &data, "managed copy");
    releaser.join().unwrap();
    // An ordinary download agrees, and a device buffer has no host view.
    assert_same(&b.to_host(&s1).unwrap(), &data, "download");
    let plain = DeviceBuffer::<f32>::zeros(&s1, 4).unwrap();
    assert!(!plain.is_managed());
    assert!(matches!(
        plain.managed_slice(),
        Err(SafeError::Unsupported { .. })
    ));
    assert!(matches!(
        plain.prefetch(&s1, ManagedLocation::Host),
        Err(SafeError::Unsupported { .. })
    ));
    // More than the device has free is refused, with the driver's figure.
    let (_, total) = dev.memory_info().unwrap();
    match DeviceBuffer::<u8>::managed(&s1, total + 1) {
        Err(SafeError::OutOfMemory { requested, free }) => {
            assert_eq!(requested, total + 1);
            assert!(free <= total, "free {free} > total {total}");
        }
        other => panic!("a managed buffer over the device's memory: {other:?}"),
    }
    // Empty ones work; dropping with work pending leaves no error behind.
    let mut empty = DeviceBuffer::<u8>::managed(&s1, 0).unwrap();
    assert!(empty.managed_slice_mut().unwrap().is_empty());
    b.copy_to(&s2, &mut a).unwrap();
    drop((a, b, empty));
    dev.synchronize().unwrap();
}

/// The caching allocator's promise: memory freed while work on one stream
/// still uses it goes to another stream only after that work is done, and
/// straight back to the same stream (stream order covers it). The work is
/// a kernel held back behind a gate, writing the block when it runs.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_block_in_use_on_one_stream_is_not_handed_to_another() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let n = (1 << 18) + rand::rng().random_range(0..1024);
    let f = scale_add(&dev);
    let mut held = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    let ones = DeviceBuffer::from_host(&a, &vec![1.0f32; n]).unwrap();
    a.synchronize().unwrap();
    let held_at = held.device_address();
    let mut gate = Gate::on(&a);
    // y = 3·x + y on a, behind the gate: `held` is in use until it opens.
    scale_add_on(&a, &f, 3.0, &ones, &mut held, n);
    drop(held);
    let stats = dev.memory_stats();
    // Another stream gets other memory, and can use it at once.
    let data = random_f32(n);
    let other = DeviceBuffer::from_host(&b, &data).unwrap();
    assert_ne!(
        other.device_address(),
        held_at,
        "b was handed memory a's pending kernel writes"
    );
    assert_same(
        &other.to_host(&b).unwrap(),
        &data,
        "b's buffer while a is held",
    );
    assert!(!a.query().unwrap(), "a ran past its gate");
    // The same stream gets the block back straight away.
    let again = DeviceBuffer::<f32>::alloc(&a, n).unwrap();
    assert_eq!(again.device_address(), held_at, "same-stream reuse");
    assert!(dev.memory_stats().hits > stats.hits);
    gate.release();
    a.synchronize().unwrap();
    // Once a's work is done, b may have the memory too.
    drop(again);
    a.synchronize().unwrap();
    let reused = (0..4)
        .map(|_| DeviceBuffer::<f32>::alloc(&b, n).unwrap())
        .collect::<Vec<_>>();
    assert!(
        reused.iter().any(|r| r.device_address() == held_at),
        "a's finished block was never handed to b"
    );
    assert_same(&other.to_host(&b).unwrap(), &data, "b's buffer after a ran");
    dev.synchronize().unwrap();
}

/// Runs `reader` on another thread while stream `a` is gated, checks that it
/// has not finished after [`HOLD`], releases the gate and returns what
/// the reader returned.
fn held_back<R: Send>(
    a: &CudaStreamHandle,
    gate: &mut Gate,
    reader: impl FnOnce() -> R + Send,
) -> R {
    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel();
        let handle = scope.spawn(move || {
            let r = reader();
            let _ = done_tx.send(());
            r
        });
        std::thread::sleep(HOLD);
        let early = done_rx.try_recv().is_ok();
        let a_idle = a.query().unwrap();
        gate.release();
        let r = handle.join().expect("reader thread panicked");
        assert!(
            !a_idle,
            "the gated stream reported idle before its gate opened"
        );
        assert!(
            !early,
            "the reader finished while the writer's stream was still held back"
        );
        r
    })
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_read_on_another_stream_waits_for_the_write() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let n = (1 << 20) + rand::rng().random_range(0..1024);
    let data = random_f32(n);
    let src = DeviceBuffer::from_host(&a, &data).unwrap();
    let mut dst = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    a.synchronize().unwrap();

    let mut gate = Gate::on(&a);
    src.copy_to(&a, &mut dst).unwrap(); // the write, behind the gate
    let got = held_back(&a, &mut gate, || {
        let mut host = vec![0.0f32; n];
        dst.read_into(&b, &mut host).unwrap(); // the read, on b
        b.synchronize().unwrap();
        host
    });
    assert_same(&got, &data, "read on b of a buffer written on a");
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_write_on_another_stream_waits_for_the_read() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let n = (1 << 20) + rand::rng().random_range(0..1024);
    let (old, new) = (random_f32(n), random_f32(n));
    let mut buf = DeviceBuffer::from_host(&a, &old).unwrap();
    let fresh = DeviceBuffer::from_host(&b, &new).unwrap();
    let mut copy = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    dev.synchronize().unwrap();

    let mut gate = Gate::on(&a);
    buf.copy_to(&a, &mut copy).unwrap(); // the read, behind the gate
    held_back(&a, &mut gate, || {
        fresh.copy_to(&b, &mut buf).unwrap(); // the overwrite, on b
        b.synchronize().unwrap();
    });
    assert_same(
        &copy.to_host(&a).unwrap(),
        &old,
        "the read saw the data before the overwrite",
    );
    assert_same(&buf.to_host(&b).unwrap(), &new, "the overwrite landed");
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn dropping_buffers_with_pending_work_is_safe_and_the_memory_is_reused() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let n = (1 << 22) + rand::rng().random_range(0..1024);
    let (data, other) = (random_f32(n), random_f32(n));
    let src = DeviceBuffer::from_host(&b, &data).unwrap();
    let fresh = DeviceBuffer::from_host(&b, &other).unwrap();
    let mut kept = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    let mut doomed = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    dev.synchronize().unwrap();

    let mut gate = Gate::on(&a);
    // Pending on a: a read of `src` (owned by b) and a write of `doomed`.
    src.copy_to(&a, &mut kept).unwrap();
    fresh.copy_to(&a, &mut doomed).unwrap();
    drop(src); // freed on b, after a's pending read
    drop(doomed); // freed on a, after its pending write
    // New buffers on both streams, likely on the memory just freed, get new
    // data while a is still held: the pending read must not see it.
    let mut reuse_b = DeviceBuffer::<f32>::alloc(&b, n).unwrap();
    let mut reuse_a = DeviceBuffer::<f32>::alloc(&a, n).unwrap();
    fresh.copy_to(&b, &mut reuse_b).unwrap();
    fresh.copy_to(&a, &mut reuse_a).unwrap();
    std::thread::sleep(HOLD);
    assert!(!a.query().unwrap(), "a ran past its gate");
    gate.release();
    dev.synchronize().expect("no error kept from the drops");
    dev.check_err().unwrap();
    assert_same(
        &kept.to_host(&a).unwrap(),
        &data,
        "the read pending when its source was dropped",
    );
    assert_same(
        &reuse_a.to_host(&a).unwrap(),
        &other,
        "a buffer on a after the drops",
    );
    assert_same(
        &reuse_b.to_host(&b).unwrap(),
        &other,
        "a buffer on b after the drops",
    );
    // Many more allocations of the same size: the freed memory is reusable.
    for _ in 0..4 {
        let fill = random_f32(n);
        let x = DeviceBuffer::from_host(&a, &fill).unwrap();
        assert_same(&x.to_host(&b).unwrap(), &fill, "a reused allocation");
    }
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_panicking_host_function_is_reported_once_by_synchronize() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    s.host_fn(|| panic!("host callback boom")).unwrap();
    match s.synchronize() {
        Err(SafeError::Driver { name, message, .. }) => {
            assert_eq!(name, "HOST_CALLBACK_PANICKED");
            assert!(message.contains("host callback boom"), "{message}");
        }
        other => panic!("expected the callback's panic, got {other:?}"),
    }
    s.synchronize().expect("the panic is reported once");
    // The stream still runs work after it.
    let data = random_f32(1000);
    assert_same(
        &DeviceBuffer::from_host(&s, &data)
            .unwrap()
            .to_host(&s)
            .unwrap(),
        &data,
        "after a panic",
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn events_complete_in_stream_order_and_time_the_gate() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let (start, end) = (
        CudaEventHandle::timed(&dev).unwrap(),
        CudaEventHandle::timed(&dev).unwrap(),
    );
    assert!(
        end.query().unwrap(),
        "a never-recorded event counts as complete"
    );

    let n = 1 << 16;
    let data = random_f32(n);
    let src = DeviceBuffer::from_host(&a, &data).unwrap();
    let mut out = DeviceBuffer::<f32>::zeros(&b, n).unwrap();
    dev.synchronize().unwrap();
    start.record(&a).unwrap();
    start.synchronize().unwrap();
    let mut gate = Gate::on(&a);
    end.record(&a).unwrap();
    // b waits for `end`, so b's work is held back too.
    b.wait(&end).unwrap();
    let marker = Arc::new(AtomicUsize::new(0));
    let m = marker.clone();
    b.host_fn(move || {
        m.store(1, Ordering::SeqCst);
    })
    .unwrap();
    std::thread::sleep(HOLD);
    assert!(
        !end.query().unwrap(),
        "an event behind a closed gate reported complete"
    );
    assert!(
        !b.query().unwrap(),
        "b ran past its wait on the gated event"
    );
    assert_eq!(
        marker.load(Ordering::SeqCst),
        0,
        "b's host function ran before the event"
    );
    gate.release();
    end.synchronize().unwrap();
    assert!(end.query().unwrap());
    b.synchronize().unwrap();
    assert_eq!(marker.load(Ordering::SeqCst), 1);
    let held_ms = start.elapsed_ms(&end).unwrap();
    assert!(
        held_ms >= 0.9 * HOLD.as_secs_f32() * 1e3,
        "start..end spans the gate, held {HOLD:?}, but measured {held_ms} ms"
    );

    // Re-recording replaces what the event captures.
    let mut gate = Gate::on(&a);
    end.record(&a).unwrap();
    std::thread::sleep(HOLD / 2);
    assert!(
        !end.query().unwrap(),
        "a re-recorded event still reports its old completion"
    );
    gate.release();
    end.synchronize().unwrap();
    assert!(end.query().unwrap());

    src.copy_to(&b, &mut out).unwrap();
    assert_same(
        &out.to_host(&b).unwrap(),
        &data,
        "a copy on b after the waits",
    );
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_foreign_stream_over_a_raw_handle_is_the_same_stream() {
    let _serial = serial();
    let dev = device();
    let (own, other) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    // SAFETY: `own` outlives `foreign` (declared before it, dropped after).
    let foreign = unsafe { ForeignStream::from_raw(&dev, own.raw()) };
    assert_eq!(foreign.raw(), own.raw());
    assert_ne!(
        own.raw(),
        0,
        "a created stream is not the legacy default stream"
    );

    // A gate put on through the foreign handle holds the owned stream.
    let mut gate = Gate::on_foreign(&foreign);
    let e = CudaEventHandle::new(&dev).unwrap();
    foreign.record(&e).unwrap();
    std::thread::sleep(HOLD);
    assert!(
        !own.query().unwrap(),
        "the owned stream ran past a gate set through its raw handle"
    );
    assert!(!e.query().unwrap());
    gate.release();
    own.synchronize().unwrap();
    assert!(e.query().unwrap());

    // The foreign stream waits for an event of another stream.
    let mut gate = Gate::on(&other);
    let e2 = CudaEventHandle::new(&dev).unwrap();
    e2.record(&other).unwrap();
    foreign.wait(&e2).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    foreign
        .host_fn(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    std::thread::sleep(HOLD);
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the foreign stream ran past its wait"
    );
    gate.release();
    own.synchronize().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 1);

    // A panic in a foreign host function is kept for take_panic, once.
    foreign.host_fn(|| panic!("foreign boom")).unwrap();
    own.synchronize().ok(); // the owner's sync does not know our callbacks
    match foreign.take_panic() {
        Err(SafeError::Driver { message, .. }) => {
            assert!(message.contains("foreign boom"), "{message}")
        }
        other => panic!("expected the foreign callback's panic, got {other:?}"),
    }
    foreign.take_panic().expect("reported once");
    drop(foreign);
    dev.synchronize().unwrap();
}

const SCALE_ADD: &str = r#"
extern "C" __global__ void scale_add(float a, const float* x, float* y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}"#;

fn scale_add(dev: &CudaDevice) -> unigpu_cuda_safe::CudaFunctionHandle {
    nvrtc_function(dev, SCALE_ADD, "scale_add")
}

/// Kernel `name` of `source`, compiled by NVRTC for the device.
fn nvrtc_function(
    dev: &CudaDevice,
    source: &str,
    name: &str,
) -> unigpu_cuda_safe::CudaFunctionHandle {
    let (major, minor) = dev.properties().unwrap().compute_capability;
    let compiled = nvrtc::compile(
        source,
        &format!("{name}.cu"),
        &[format!("--gpu-architecture=sm_{major}{minor}")],
        &[name.into()],
    )
    .unwrap_or_else(|e| panic!("nvrtc compiles {name}: {e}"));
    let symbol = &compiled.lowered_names[0].1;
    CudaModuleHandle::load(dev, &compiled.cubin)
        .unwrap()
        .function(symbol)
        .unwrap()
}

/// `y = alpha·x + y` over `n` elements on `stream`.
fn scale_add_on(
    stream: &CudaStreamHandle,
    f: &unigpu_cuda_safe::CudaFunctionHandle,
    alpha: f32,
    x: &dyn BufferArg,
    y: &mut dyn BufferArg,
    n: usize,
) {
    launch(
        stream,
        f,
        dims(n),
        &mut [
            KernelParam::F32(alpha),
            KernelParam::Buffer(x),
            KernelParam::BufferMut(y),
            KernelParam::U32(n as u32),
        ],
    )
    .unwrap();
}

fn dims(n: usize) -> LaunchDims {
    LaunchDims {
        grid_dim: (n.div_ceil(256) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

const PUT_WORD: &str = r#"
extern "C" __global__ void put_word(unsigned int* w, unsigned int v) { *w = v; }"#;

/// Pinned buffers as kernel arguments, read and written in place through
/// the host's address: a kernel held back behind a gate reads one and
/// writes another, the host's read waits for it and sees every element of
/// the host reference; a word a kernel wrote is swapped out once.
#[test]
#[ignore = "needs a CUDA GPU"]
fn pinned_buffers_are_kernel_arguments_and_host_reads_wait_for_the_kernel() {
    let _serial = serial();
    let dev = device();
    let a = CudaStreamHandle::new(&dev).unwrap();
    let f = scale_add(&dev);
    let n = 50_000 + rand::rng().random_range(0..1000);
    let (x, y0) = (random_f32(n), random_f32(n));
    let mut px = PinnedBuffer::<f32>::new(&dev, n).unwrap();
    px.as_mut_slice().unwrap().copy_from_slice(&x);
    let mut py = PinnedBuffer::<f32>::new(&dev, n).unwrap();
    py.as_mut_slice().unwrap().copy_from_slice(&y0);
    assert!(
        py.kernels_can_take(),
        "a 64-bit CUDA device has unified addressing"
    );
    let mut gate = Gate::on(&a);
    scale_add_on(&a, &f, 2.0, &px, &mut py, n);
    std::thread::sleep(HOLD);
    assert!(!a.query().unwrap(), "the gated kernel ran early");
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(HOLD);
        gate.release();
    });
    // Waits for the gated kernel: never y0.
    let want: Vec<f32> = x.iter().zip(&y0).map(|(x, y)| 2.0 * x + y).collect();
    assert_same(
        py.as_slice().unwrap(),
        &want,
        "kernel output in pinned memory",
    );
    releaser.join().unwrap();

    let put = nvrtc_function(&dev, PUT_WORD, "put_word");
    let mut word = PinnedBuffer::<u32>::new(&dev, 1).unwrap();
    let v = rand::rng().random_range(1..u32::MAX);
    launch(
        &a,
        &put,
        dims(1),
        &mut [KernelParam::BufferMut(&mut word), KernelParam::U32(v)],
    )
    .unwrap();
    a.synchronize().unwrap();
    assert_eq!(word.swap_first(0), Some(v), "the kernel's word");
    assert_eq!(word.swap_first(0), Some(0), "swapped out once");
    assert_eq!(
        PinnedBuffer::<u32>::new(&dev, 0).unwrap().swap_first(1),
        None
    );
    drop((px, py, word));
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nvrtc_kernels_launch_in_stream_order_and_compile_errors_carry_the_log() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let f = scale_add(&dev);
    assert!(f.max_threads_per_block().unwrap() >= 256);
    let n = 100_000 + rand::rng().random_range(0..1000);
    let (x, y0) = (random_f32(n), random_f32(n));
    let dx = DeviceBuffer::from_host(&a, &x).unwrap();
    let mut dy = DeviceBuffer::<f32>::zeros(&a, n).unwrap();
    let y_src = DeviceBuffer::from_host(&a, &y0).unwrap();
    a.synchronize().unwrap();
    // y is written on gated a; the kernel on b must wait for it.
    let mut gate = Gate::on(&a);
    y_src.copy_to(&a, &mut dy).unwrap();
    scale_add_on(&b, &f, 2.0, &dx, &mut dy, n);
    std::thread::sleep(HOLD);
    assert!(
        !b.query().unwrap(),
        "the kernel on b ran before its input was written on a"
    );
    gate.release();
    let got = dy.to_host(&b).unwrap();
    for i in 0..n {
        // 2·x is exact, so a fused multiply-add gives the same f32.
        assert_eq!(
            got[i],
            2.0 * x[i] + y0[i],
            "element {i}: x {} y {}",
            x[i],
            y0[i]
        );
    }

    // Through a foreign stream, buffers are refused and raw addresses work.
    // SAFETY: `b` outlives `foreign`.
    let foreign = unsafe { ForeignStream::from_raw(&dev, b.raw()) };
    let refused = foreign.launch(
        &f,
        dims(n),
        &[KernelParam::F32(1.0), KernelParam::Buffer(&dx)],
    );
    assert!(
        matches!(refused, Err(SafeError::DeviceMismatch { .. })),
        "{refused:?}"
    );

    match nvrtc::compile("__global__ void broken( { }", "broken.cu", &[], &[]) {
        Err(SafeError::Compile { log }) => assert!(log.contains("broken.cu"), "{log}"),
        other => panic!("expected a compile error with its log, got {other:?}"),
    }
    dev.synchronize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_exported_buffer_outlives_the_buffer_and_reads_back_through_an_import() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    let n = (1 << 20) + rand::rng().random_range(0..1024);
    let data = random_f32(n);
    let src = DeviceBuffer::from_host(&s, &data).unwrap();
    let mut buf = DeviceBuffer::<f32>::zeros(&s, n).unwrap();
    s.synchronize().unwrap();

    // The export's event covers a write still held back by a gate.
    let mut gate = Gate::on(&s);
    src.copy_to(&s, &mut buf).unwrap();
    let (tensor, ready) = buf.to_dlpack(&s).unwrap();
    drop(buf); // the memory is parked in the lease, not freed
    std::thread::sleep(HOLD);
    assert!(
        !ready.query().unwrap(),
        "the export's event completed before the pending write"
    );
    gate.release();
    ready.synchronize().unwrap();

    let view = tensor.view().unwrap();
    assert_eq!(view.len, n);
    assert_eq!(view.device.device_type, kDLCUDA);
    assert_eq!(view.device.device_id, dev.ordinal() as i32);
    // Freshly allocated memory after the drop must not land on the lease.
    let other = random_f32(n);
    let filler = DeviceBuffer::from_host(&s, &other).unwrap();
    let imported = DeviceBuffer::<f32>::from_dlpack(&s, tensor).unwrap();
    assert!(imported.is_imported());
    assert_same(
        &imported.to_host(&s).unwrap(),
        &data,
        "exported memory after its buffer was dropped",
    );
    assert_same(
        &filler.to_host(&s).unwrap(),
        &other,
        "an allocation made while the lease held memory",
    );
    drop(imported); // the last holder: the memory is freed now
    dev.synchronize().unwrap();
    let again = DeviceBuffer::from_host(&s, &data).unwrap();
    assert_same(
        &again.to_host(&s).unwrap(),
        &data,
        "after the lease was freed",
    );
}

/// A foreign producer's tensor over device memory: its deleter counts.
struct Producer {
    shape: [i64; 1],
    deleted: Arc<AtomicUsize>,
}

unsafe extern "C" fn count_delete(p: *mut DLManagedTensorVersioned) {
    // SAFETY: `p` and its manager_ctx are the Boxes made by `foreign_tensor`;
    // DLPack calls the deleter once.
    unsafe {
        let t = Box::from_raw(p);
        let owner = Box::from_raw(t.manager_ctx.cast::<Producer>());
        owner.deleted.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tensor over `len` f32s at device address `data`, whose deleter counts
/// into the returned counter.
///
/// # Safety
/// The memory stays allocated until the deleter has run.
unsafe fn foreign_tensor(
    data: u64,
    len: usize,
    device_id: i32,
    dtype: DLDataType,
    flags: u64,
) -> (ManagedTensor, Arc<AtomicUsize>) {
    let deleted = Arc::new(AtomicUsize::new(0));
    let owner = Box::into_raw(Box::new(Producer {
        shape: [len as i64],
        deleted: deleted.clone(),
    }));
    let t = Box::new(DLManagedTensorVersioned {
        version: DLPackVersion {
            major: DLPACK_MAJOR_VERSION,
            minor: DLPACK_MINOR_VERSION,
        },
        manager_ctx: owner.cast::<c_void>(),
        deleter: Some(count_delete),
        flags,
        dl_tensor: DLTensor {
            data: data as *mut c_void,
            device: DLDevice {
                device_type: kDLCUDA,
                device_id,
            },
            ndim: 1,
            dtype,
            // SAFETY: `owner` is a live Box, freed only by the deleter.
            shape: unsafe { (*owner).shape.as_mut_ptr() },
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        },
    });
    // SAFETY: a well-formed tensor, owned by nobody else; the caller keeps
    // the memory alive.
    let tensor = unsafe { ManagedTensor::from_raw_versioned(Box::into_raw(t)) }.unwrap();
    (tensor, deleted)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn an_imported_buffer_calls_the_deleter_once_after_its_work() {
    let _serial = serial();
    let dev = device();
    let s = CudaStreamHandle::new(&dev).unwrap();
    let n = (1 << 20) + rand::rng().random_range(0..1024);
    let (data, new) = (random_f32(n), random_f32(n));
    // The producer's memory: a buffer of ours whose address we lend out
    // (through an export, which keeps it alive until we drop the tensor).
    let mut owner = DeviceBuffer::from_host(&s, &data).unwrap();
    let (lent, ready) = owner.to_dlpack(&s).unwrap();
    ready.synchronize().unwrap();
    let addr = lent.view().unwrap().data;
    let id = dev.ordinal() as i32;

    // Rejected imports still call the deleter, once.
    for (what, device_id, dtype, flags) in [
        ("wrong dtype", id, dtype_of::<i32>(), 0),
        ("wrong device", id + 7, dtype_of::<f32>(), 0),
        (
            "read-only",
            id,
            dtype_of::<f32>(),
            DLPACK_FLAG_BITMASK_READ_ONLY,
        ),
    ] {
        // SAFETY: `lent` keeps the memory alive for the whole test.
        let (t, deleted) = unsafe { foreign_tensor(addr, n, device_id, dtype, flags) };
        let r = DeviceBuffer::<f32>::from_dlpack(&s, t);
        assert!(matches!(r, Err(SafeError::Dlpack { .. })), "{what}: {r:?}");
        assert_eq!(deleted.load(Ordering::SeqCst), 1, "{what}: deleter calls");
    }

    // SAFETY: as above.
    let (t, deleted) = unsafe { foreign_tensor(addr, n, id, dtype_of::<f32>(), 0) };
    let mut imported = DeviceBuffer::<f32>::from_dlpack(&s, t).unwrap();
    assert_same(&imported.to_host(&s).unwrap(), &data, "the imported view");
    let fresh = DeviceBuffer::from_host(&s, &new).unwrap();
    s.synchronize().unwrap();
    // A write to it, held back; dropping it must wait for the write before
    // handing the memory back (drop blocks, so it runs on another thread).
    let mut gate = Gate::on(&s);
    fresh.copy_to(&s, &mut imported).unwrap();
    std::thread::scope(|scope| {
        let dropper = scope.spawn(move || drop(imported));
        std::thread::sleep(HOLD);
        let early = deleted.load(Ordering::SeqCst);
        gate.release();
        dropper.join().unwrap();
        assert_eq!(
            early, 0,
            "the deleter ran while the buffer's write was pending"
        );
    });
    assert_eq!(
        deleted.load(Ordering::SeqCst),
        1,
        "deleter calls after the drop"
    );
    dev.synchronize().unwrap();
    assert_same(
        &owner.to_host(&s).unwrap(),
        &new,
        "the write through the import landed",
    );
    drop(lent);
    dev.synchronize().unwrap();
}

/// Large transfers go through the device's ring of page-locked slots:
/// sizes just below and above where staging starts, not a multiple of a
/// slot, and more than the whole ring, each checked byte for byte both
/// ways, into an existing slice and into a new vector, on two streams.
#[test]
#[ignore = "needs a CUDA GPU"]
fn staged_transfers_keep_every_byte_at_every_size() {
    let _serial = serial();
    let dev = device();
    let (a, b) = (
        CudaStreamHandle::new(&dev).unwrap(),
        CudaStreamHandle::new(&dev).unwrap(),
    );
    let mut rng = rand::rng();
    let mib = 1usize << 20;
    for bytes in [
        4 * mib - 4,
        4 * mib,
        4 * mib + 4,
        8 * mib + 4 * rng.random_range(1..1000),
        37 * mib + 4 * rng.random_range(1..1000),
        160 * mib + 4 * rng.random_range(1..1000),
    ] {
        let n = bytes / 4;
        let data: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        let buf = DeviceBuffer::from_host(&a, &data).unwrap();
        // Read on the other stream: ordered after the staged upload.
        assert_same(
            &buf.to_host(&b).unwrap(),
            &data,
            "to_host after a staged upload",
        );
        let mut back = vec![0u32; n];
        buf.read_into(&a, &mut back).unwrap();
        assert_same(&back, &data, "read_into after a staged upload");
        // Overwrite in place, then read back again.
        let mut buf = buf;
        let other: Vec<u32> = (0..n).map(|_| rng.random()).collect();
        buf.write_from(&b, &other).unwrap();
        assert_same(&buf.to_host(&a).unwrap(), &other, "a staged overwrite");
    }
    dev.synchronize().unwrap();
}
