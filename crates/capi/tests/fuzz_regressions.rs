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
