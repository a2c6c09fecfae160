//! Per-call overhead of the C API over the Rust facade, measured in one run:
//!
//! - `array_len`: `ug_array_len` against `AnyArray::len`;
//! - `array_dtype`: `ug_array_dtype` against `AnyArray::dtype`;
//! - `op_scale_1`: `ug_op_scale` on a 1-element f32 CPU array (NULL stream)
//!   against `ctx.ops().scale_any` on the same kind of array.
//!
//! The C functions are called through function pointers hidden from the
//! optimizer (as a C program calls into the library), the Rust ones with
//! their arguments behind `black_box`. Rounds of both alternate and the
//! median round is reported, one parseable line per call:
//!
//! `capi_overhead call=array_len rust_ns=0.6 c_ns=4.1 overhead_ns=3.5 goal_ns=20 rounds=15 iters=2000000`
//!
//! Run: `cargo bench -p unigpu-capi --bench capi_overhead` (CPU backend).
//! No timing is asserted anywhere.

use std::hint::black_box;
use std::ptr;
use std::time::Instant;

use unigpu::{AnyArray, Context, DType, Scalar};
use unigpu_capi::*;

const ROUNDS: usize = 15;

/// Nanoseconds per call of `f` run `iters` times.
fn per_call(iters: u64, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs both sides `ROUNDS` times, alternating, and prints the medians.
fn compare(name: &str, iters: u64, mut rust: impl FnMut(), mut c: impl FnMut()) {
    // Warm up both.
    per_call(iters / 10 + 1, &mut rust);
    per_call(iters / 10 + 1, &mut c);
    let (mut r, mut cs) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        r.push(per_call(iters, &mut rust));
        cs.push(per_call(iters, &mut c));
    }
    let (r, c) = (median(r), median(cs));
    println!(
        "capi_overhead call={name} rust_ns={r:.2} c_ns={c:.2} overhead_ns={:.2} goal_ns=20 rounds={ROUNDS} iters={iters}",
        c - r
    );
}

type LenFn = unsafe extern "C" fn(*const ug_array, *mut usize) -> ug_status;
type DtypeFn = unsafe extern "C" fn(*const ug_array, *mut ug_dtype) -> ug_status;
type ScaleFn = unsafe extern "C" fn(*const ug_stream, ug_scalar, *mut ug_array) -> ug_status;

fn main() {
    let ctx = Context::new(unigpu::Backend::Cpu, 0).expect("cpu context");
    let mut c_ctx = ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let st = unsafe { ug_context_new(ug_backend::Cpu as u32, 0, &mut c_ctx) };
    assert_eq!(st, ug_status::OK);

    // Trivial calls on a 1000-element array.
    let any = AnyArray::zeros(&ctx, DType::F32, 1000).expect("array");
    let mut arr = ptr::null_mut();
    // SAFETY: a live context and a valid out-pointer.
    let st = unsafe { ug_array_zeros(c_ctx, ug_dtype::F32 as u32, 1000, &mut arr) };
    assert_eq!(st, ug_status::OK);

    let len_fn: LenFn = black_box(ug_array_len);
    compare(
        "array_len",
        2_000_000,
        || {
            black_box(black_box(&any).len());
        },
        || {
            let mut n = 0usize;
            // SAFETY: a live array and a valid out-pointer.
            black_box(unsafe { len_fn(black_box(arr), &mut n) });
            black_box(n);
        },
    );

    let dtype_fn: DtypeFn = black_box(ug_array_dtype);
    compare(
        "array_dtype",
        2_000_000,
        || {
            black_box(black_box(&any).dtype());
        },
        || {
            let mut d = ug_dtype::U8;
            // SAFETY: a live array and a valid out-pointer.
            black_box(unsafe { dtype_fn(black_box(arr), &mut d) });
            black_box(d);
        },
    );

    // A tiny op: scale a 1-element array on the default stream. Each call
    // enqueues a job on the CPU stream's worker; both sides wait for their
    // queue at the end of a round (inside the timing) so neither grows.
    let mut one = AnyArray::zeros(&ctx, DType::F32, 1).expect("array");
    let mut c_one = ptr::null_mut();
    // SAFETY: a live context and a valid out-pointer.
    let st = unsafe { ug_array_zeros(c_ctx, ug_dtype::F32 as u32, 1, &mut c_one) };
    assert_eq!(st, ug_status::OK);
    let scale_fn: ScaleFn = black_box(ug_op_scale);
    let iters = 20_000;
    let (mut k_rust, mut k_c) = (0u64, 0u64);
    compare(
        "op_scale_1",
        iters,
        || {
            ctx.ops()
                .scale_any(black_box(Scalar::new(1.0f32)), black_box(&mut one))
                .expect("scale");
            k_rust += 1;
            if k_rust % iters == 0 {
                ctx.sync().expect("sync");
            }
        },
        || {
            // SAFETY: a live array; a NULL stream is the default stream.
            let st = unsafe { scale_fn(ptr::null(), ug_scalar_f32(1.0), black_box(c_one)) };
            assert_eq!(st, ug_status::OK);
            k_c += 1;
            if k_c % iters == 0 {
                // SAFETY: a live context.
                assert_eq!(unsafe { ug_context_sync(c_ctx) }, ug_status::OK);
            }
        },
    );

    // SAFETY: each handle is freed once, after its last use.
    unsafe {
        ug_array_free(arr);
        ug_array_free(c_one);
        ug_context_free(c_ctx);
    }
}
