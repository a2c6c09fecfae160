//! The per-thread last error message, shared by every C API in the process
//! (see the crate docs), and the `<prefix>_last_error_message` contract.

use std::cell::RefCell;
use std::ffi::c_char;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Replaces this thread's last error message.
///
/// NUL bytes would end the C string early, so they are stored as the two
/// characters `\0`. During thread teardown (the slot is gone) the message is
/// dropped; nothing panics.
pub fn set_last_error(message: &str) {
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            slot.clear();
            for (i, part) in message.split('\0').enumerate() {
                if i > 0 {
                    slot.push_str("\\0");
                }
                slot.push_str(part);
            }
        }
    });
}

/// Clears this thread's last error message (a successful call).
pub fn clear_last_error() {
    let _ = LAST_ERROR.try_with(|slot| {
        if let Ok(mut slot) = slot.try_borrow_mut() {
            slot.clear();
        }
    });
}

/// This thread's last error message; empty when the last call succeeded.
pub fn last_error() -> String {
    LAST_ERROR
        .try_with(|slot| slot.try_borrow().map(|s| s.clone()).unwrap_or_default())
        .unwrap_or_default()
}

/// The body of every `<prefix>_last_error_message(char* buf, size_t len)`
/// export, with `snprintf` semantics: copies at most `len - 1` bytes of this
/// thread's last error message into `buf`, followed by a NUL, and returns the
/// message's full length in bytes (without the NUL). Returns 0 when the last
/// call on this thread succeeded. With `buf` NULL or `len` 0 nothing is
/// written and the length is still returned, so C can size a buffer first.
///
/// # Safety
///
/// `buf` is NULL or valid for `len` writes of `c_char`.
pub unsafe fn last_error_message(buf: *mut c_char, len: usize) -> usize {
    let copy = |bytes: &[u8]| {
        if !buf.is_null() && len > 0 {
            let n = bytes.len().min(len - 1);
            // SAFETY: `buf` is non-NULL and valid for `len` > `n` writes (the
            // caller's promise); `bytes` is a Rust allocation C cannot point
            // into, so the ranges do not overlap. u8 and c_char have one size
            // and alignment.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
                buf.add(n).write(0);
            }
        }
        bytes.len()
    };
    // No clone: the slot is only borrowed while the bytes are copied. During
    // thread teardown, or in the impossible case of a borrow in progress, the
    // message reads as empty.
    LAST_ERROR
        .try_with(|slot| match slot.try_borrow() {
            Ok(message) => copy(message.as_bytes()),
            Err(_) => copy(b""),
        })
        .unwrap_or_else(|_| copy(b""))
}
