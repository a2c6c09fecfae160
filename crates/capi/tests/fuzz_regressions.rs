//! Call sequences the `capi_calls` fuzz target (fuzz/, docs/fuzzing.md)
//! found, kept as tests with the calls inline. Calls the exports directly
//! through the rlib, as C would.

use std::ptr;

use unigpu_capi::*;

fn cpu_context() -> *mut ug_context {
    let mut ctx = ptr::null_mut();
    // SAFETY: a valid out-pointer.
    let st = unsafe { ug_context_new(ug_backend::Cpu as u32, 0, &mut ctx) };
    assert_eq!(st, ug_status::OK);
    ctx
}

fn last_error() -> String {
    let mut buf = vec![0 as std::ffi::c_char; 512];
    // SAFETY: `buf` holds 512 bytes.
    unsafe { ug_last_error_message(buf.as_mut_ptr(), buf.len()) };
    // SAFETY: NUL-terminated by ug_last_error_message.
    unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// The crash: a pinned buffer of 2^50 f32s on the CPU backend aborted the
/// process (the allocator refused 4 PiB; the host pinned buffer did not
/// check the request against the free memory first). Now UG_OUT_OF_MEMORY,
/// the out-parameter untouched.
#[test]
fn a_huge_pinned_buffer_is_out_of_memory_not_an_abort() {
    let ctx = cpu_context();
    let sentinel = 0x5e5e_5e5e_usize as *mut ug_pinned;
    let mut out = sentinel;
    // SAFETY: a live context and a valid out-pointer.
    let st = unsafe { ug_pinned_new(ctx, ug_dtype::F32 as u32, 1 << 50, &mut out) };
    assert_eq!(st, ug_status::OUT_OF_MEMORY);
    assert_eq!(out, sentinel, "written on failure");
    let msg = last_error();
    assert!(msg.contains(&(4u64 << 50).to_string()), "{msg}");
    // SAFETY: a live context, freed once.
    unsafe { ug_context_free(ctx) };
}

/// The hang: an array's own DLPack export imported again shares the
/// array's memory and lock, and `ug_op_tanh(NULL, b, a)` locked it twice
/// on the stream's worker, which never finished (freeing the context then
/// waited for it forever). Now `UG_UNSUPPORTED` with a message, for the
/// ops, copies and launches that write one of the pair and use the other.
#[test]
fn an_array_and_its_dlpack_reimport_in_one_call_is_refused_not_a_hang() {
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
    let ctx = cpu_context();
    let mut a = ptr::null_mut();
    // SAFETY: a live context, a valid out-pointer.
    let st = unsafe { ug_array_zeros(ctx, ug_dtype::F32 as u32, 8, &mut a) };
    assert_eq!(st, ug_status::OK);
    let mut t = ptr::null_mut();
    // SAFETY: a live array, a valid out-pointer.
    let st = unsafe { ug_array_to_dlpack(a, UG_DLPACK_NO_SYNC, &mut t) };
    assert_eq!(st, ug_status::OK);
    let mut b = ptr::null_mut();
    // SAFETY: a live context, a tensor from ug_array_to_dlpack (consumed).
    let st = unsafe { ug_array_from_dlpack(ctx, t, &mut b) };
    assert_eq!(st, ug_status::OK);

    // SAFETY: live handles; a NULL stream is the default one.
    let st = unsafe { ug_op_tanh(ptr::null(), b, a) };
    assert_eq!(st, ug_status::UNSUPPORTED);
    assert!(
        last_error().contains("shares its memory"),
        "{}",
        last_error()
    );
    // SAFETY: as above.
    let st = unsafe { ug_array_copy(b, a) };
    assert_eq!(st, ug_status::UNSUPPORTED);
    // `a` as output and input is fine (the input reads a copy, the
    // bindings' one rule), but `b` still shares `a`'s memory.
    // SAFETY: as above.
    let st = unsafe { ug_op_add(ptr::null(), a, b, a) };
    assert_eq!(st, ug_status::UNSUPPORTED, "{}", last_error());
    assert!(
        last_error().contains("shares its memory"),
        "{}",
        last_error()
    );
    // Reading both is fine.
    let mut dot = ug_scalar_f32(1.0);
    // SAFETY: as above, and a valid out-pointer.
    let st = unsafe { ug_op_dot(ptr::null(), a, b, &mut dot) };
    assert_eq!(st, ug_status::OK);
    // SAFETY: live handles, each freed once; nothing is left waiting.
    unsafe {
        assert_eq!(ug_context_sync(ctx), ug_status::OK);
        ug_array_free(b);
        ug_array_free(a);
        ug_context_free(ctx);
    }
}
