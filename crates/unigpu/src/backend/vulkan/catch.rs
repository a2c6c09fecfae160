//! Catching wgpu's errors on the thread that caused them, in place of
//! wgpu's error scopes. wgpu (28 and later) keeps a device's error scopes
//! in a map keyed by thread id whose entries are never removed
//! (`ErrorSinkRaw::scopes` in wgpu's `backend/wgpu_core.rs`): every thread
//! that once pushed a scope leaves about 300 bytes on the device for as
//! long as it lives, here the process. Each stream's worker thread pushed
//! one, so every context left 0.6 KiB behind (tests/churn.rs).
//!
//! Instead, wgpu reports every error to the device's uncaptured-error
//! handler, on the thread whose call caused it (device.rs), and the handler
//! hands it to that thread's innermost open [`Catch`] of the device and
//! kind, kept in a thread-local that goes away with the thread. Errors no
//! catch takes are the device's, as before.

use std::cell::RefCell;
use std::marker::PhantomData;

/// An open catch: the first error of one kind one device reports on its
/// thread.
#[derive(Debug)]
struct Open {
    device: usize,
    filter: wgpu::ErrorFilter,
    error: Option<wgpu::Error>,
}

thread_local! {
    static OPEN: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
}

/// The errors matching `filter` that device `device` (its ordinal) reports
/// on this thread until [`Catch::close`]; the innermost open catch of the
/// thread gets them. Not `Send`: it belongs to its thread.
#[derive(Debug)]
pub(crate) struct Catch {
    depth: usize,
    _thread: PhantomData<*const ()>,
}

impl Catch {
    pub(crate) fn open(device: usize, filter: wgpu::ErrorFilter) -> Catch {
        let depth = OPEN.with_borrow_mut(|open| {
            open.push(Open {
                device,
                filter,
                error: None,
            });
            open.len() - 1
        });
        Catch {
            depth,
            _thread: PhantomData,
        }
    }

    /// The first error caught (later ones are dropped, as wgpu's scopes
    /// drop them).
    pub(crate) fn close(self) -> Option<wgpu::Error> {
        OPEN.with_borrow_mut(|open| {
            open.truncate(self.depth + 1);
            open.pop().and_then(|o| o.error)
        })
    }
}

impl Drop for Catch {
    /// Closes it (and any left open inside it) if `close` did not.
    fn drop(&mut self) {
        let _ = OPEN.try_with(|open| {
            if let Ok(mut open) = open.try_borrow_mut() {
                open.truncate(self.depth);
            }
        });
    }
}

/// `make`'s result, and the first error matching `filter` that device
/// `device` reported while it ran.
pub(crate) fn caught<R>(
    device: usize,
    filter: wgpu::ErrorFilter,
    make: impl FnOnce() -> R,
) -> (R, Option<wgpu::Error>) {
    let catch = Catch::open(device, filter);
    let made = make();
    (made, catch.close())
}

/// For device `device`'s uncaptured-error handler: `error`, unless an open
/// catch of this thread took it.
pub(crate) fn deliver(device: usize, error: wgpu::Error) -> Option<wgpu::Error> {
    let filter = match &error {
        wgpu::Error::OutOfMemory { .. } => wgpu::ErrorFilter::OutOfMemory,
        wgpu::Error::Validation { .. } => wgpu::ErrorFilter::Validation,
        wgpu::Error::Internal { .. } => wgpu::ErrorFilter::Internal,
    };
    let mut error = Some(error);
    let _ = OPEN.try_with(|open| {
        if let Ok(mut open) = open.try_borrow_mut()
            && let Some(catch) = open
                .iter_mut()
                .rev()
                .find(|o| o.device == device && o.filter == filter)
        {
            let e = error.take();
            catch.error = catch.error.take().or(e);
        }
    });
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validation(what: &str) -> wgpu::Error {
        wgpu::Error::Validation {
            source: what.into(),
            description: what.into(),
        }
    }

    fn oom() -> wgpu::Error {
        wgpu::Error::OutOfMemory {
            source: "oom".into(),
        }
    }

    #[test]
    fn innermost_catch_of_the_device_and_kind_takes_the_first_error() {
        let outer = Catch::open(0, wgpu::ErrorFilter::Validation);
        let (none, caught) = caught(0, wgpu::ErrorFilter::OutOfMemory, || {
            // Another kind, another device: not this catch's.
            let v = deliver(0, validation("first"));
            let other = deliver(1, oom());
            assert!(other.is_some());
            assert!(deliver(0, oom()).is_none());
            assert!(deliver(0, oom()).is_none());
            v
        });
        assert!(none.is_none(), "the outer catch took the validation error");
        assert!(matches!(caught, Some(wgpu::Error::OutOfMemory { .. })));
        assert!(deliver(0, validation("second")).is_none());
        let first = outer.close().expect("the outer catch's error");
        assert!(first.to_string().contains("first"), "{first}");
        // Nothing open: the device's.
        assert!(deliver(0, validation("third")).is_some());
        OPEN.with_borrow(|open| assert!(open.is_empty()));
    }

    #[test]
    fn a_catch_dropped_unclosed_closes_itself_and_what_it_holds() {
        let outer = Catch::open(0, wgpu::ErrorFilter::Validation);
        let inner = Catch::open(0, wgpu::ErrorFilter::Validation);
        std::mem::forget(Catch::open(0, wgpu::ErrorFilter::Internal));
        drop(inner);
        OPEN.with_borrow(|open| assert_eq!(open.len(), 1));
        assert!(deliver(0, validation("x")).is_none());
        assert!(outer.close().is_some());
        OPEN.with_borrow(|open| assert!(open.is_empty()));
    }
}
