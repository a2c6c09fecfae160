//! The C API from many threads at once: shared arrays read and written by
//! concurrent ops in opposite argument orders (the per-call locks are taken
//! in address order, so this must not deadlock), and the per-thread last
//! error. Calls the exports directly through the rlib, as C would.

use std::ffi::c_char;
use std::ptr;
use std::time::{Duration, Instant};

use unigpu_capi::*;

/// A handle shared between threads. The C API documents its handles as
/// thread-safe; the test frees them only after joining every thread.
struct Shared<T>(*mut T);
impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Shared<T> {}
// SAFETY: the handles are thread-safe (an Arc<RwLock<..>> inside) and
// outlive the threads (freed after the joins).
unsafe impl<T> Send for Shared<T> {}

fn upload(ctx: *const ug_context, host: &[f32]) -> *mut ug_array {
    let mut a = ptr::null_mut();
    // SAFETY: a live context, `host` valid for its length, `a` a valid out-pointer.
    let st = unsafe {
        ug_array_upload(
            ctx,
            ug_dtype::F32 as u32,
            host.as_ptr().cast(),
            host.len(),
            &mut a,
        )
    };
    assert_eq!(st, ug_status::OK);
    a
}

fn download(a: *const ug_array, n: usize) -> Vec<f32> {
    let mut v = vec![0f32; n];
    // SAFETY: a live array and a buffer of exactly its size.
    let st = unsafe { ug_array_download(a, v.as_mut_ptr().cast(), n * 4) };
    assert_eq!(st, ug_status::OK);
    v
}

#[test]
fn concurrent_ops_on_shared_arrays_do_not_deadlock() {
    let mut ctx = ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let st = unsafe { ug_context_new(ug_backend::Cpu as u32, 0, &mut ctx) };
    assert_eq!(st, ug_status::OK);
    let n = 4096;
    let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 100.0).collect();
    let ys: Vec<f32> = (0..n).map(|i| 1.0 - i as f32 * 0.5).collect();
    let x = Shared(upload(ctx, &xs));
    let y = Shared(upload(ctx, &ys));
    let out1 = Shared(upload(ctx, &xs));
    let out2 = Shared(upload(ctx, &xs));
    let start = Instant::now();
    let mut threads = Vec::new();
    for t in 0..4 {
        threads.push(std::thread::spawn(move || {
            let (x, y, out1, out2) = (x, y, out1, out2);
            for i in 0..300 {
                // SAFETY: live handles (see `Shared`); NULL streams.
                let st = unsafe {
                    match t {
                        0 => ug_op_add(ptr::null(), x.0, y.0, out1.0),
                        1 => ug_op_add(ptr::null(), y.0, x.0, out2.0),
                        // Writes x while the others read it: x * 2 * 0.5 == x.
                        2 => ug_op_scale(
                            ptr::null(),
                            ug_scalar_f32(if i % 2 == 0 { 2.0 } else { 0.5 }),
                            x.0,
                        ),
                        _ => {
                            let mut s = ug_scalar_f32(0.0);
                            ug_op_dot(ptr::null(), y.0, x.0, &mut s)
                        }
                    }
                };
                assert_eq!(st, ug_status::OK, "thread {t}, iteration {i}");
            }
        }));
    }
    for t in threads {
        t.join().expect("thread");
    }
    assert!(start.elapsed() < Duration::from_secs(120));

    // SAFETY: a live context.
    assert_eq!(unsafe { ug_context_sync(ctx) }, ug_status::OK);
    assert_eq!(download(x.0, n), xs, "x * 2 * 0.5 (150 times) is x");
    let sums: Vec<f32> = xs.iter().zip(&ys).map(|(a, b)| a + b).collect();
    // The last add may have read x between a scale by 2 and one by 0.5;
    // every element of out1 is then x + y or 2x + y.
    for (i, got) in download(out1.0, n).iter().enumerate() {
        assert!(
            *got == sums[i] || *got == 2.0 * xs[i] + ys[i],
            "out1[{i}] = {got}"
        );
    }
    // SAFETY: every thread has joined; each handle is freed once.
    unsafe {
        for a in [x, y, out1, out2] {
            ug_array_free(a.0);
        }
        ug_context_free(ctx);
    }
}

fn last_error() -> String {
    let mut buf = [0 as c_char; 256];
    // SAFETY: `buf` is valid for its length.
    let n = unsafe { ug_last_error_message(buf.as_mut_ptr(), buf.len()) };
    let bytes: Vec<u8> = buf[..n.min(255)].iter().map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn last_error_and_panics_are_per_thread() {
    let handles: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let msg = std::ffi::CString::new(format!("panic in thread {t}")).expect("cstr");
                // SAFETY: a NUL-terminated string.
                assert_eq!(unsafe { ug_test_panic(msg.as_ptr()) }, ug_status::PANIC);
                let err = last_error();
                assert!(err.ends_with(&format!("panic in thread {t}")), "{err}");
            })
        })
        .collect();
    for h in handles {
        h.join().expect("a panic must not escape ug_test_panic");
    }
    assert_eq!(last_error(), "");
}
