//! The pinned buffer of backends whose copies are host copies anyway (cpu)
//! or that take host memory through their own library (torch): plain host
//! memory, with copies that finish before they return. Not a backend.

use crate::element::Element;

/// `len` elements of ordinary host memory standing in for page-locked
/// memory.
#[derive(Debug)]
pub(crate) struct HostPinned<T>(pub(crate) Vec<T>);

impl<T: Element> HostPinned<T> {
    pub(crate) fn zeros(len: usize) -> crate::Result<Self> {
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| crate::Error::OutOfMemory {
                requested: len.saturating_mul(std::mem::size_of::<T>()),
                free: 0,
            })?;
        v.resize(len, T::default());
        Ok(HostPinned(v))
    }
}
