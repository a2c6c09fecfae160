//! The pinned buffer of backends whose copies are host copies anyway (cpu)
//! or that take host memory through their own library (torch): plain host
//! memory, with copies that finish before they return. Not a backend.

use crate::element::Element;

/// `len` elements of ordinary host memory standing in for page-locked
/// memory.
#[derive(Debug)]
pub(crate) struct HostPinned<T>(pub(crate) Vec<T>);

impl<T: Element> HostPinned<T> {
    /// Zeros, or `Error::OutOfMemory` for more than the host has
    /// available (checked before allocating, as for the CPU backend's
    /// arrays: a fuzzed C call asked for 4 PiB and the allocator aborted).
    pub(crate) fn zeros(len: usize) -> crate::Result<Self> {
        super::host_memory::try_alloc_vec(len).map(HostPinned)
    }
}

/// `PinnedApi` for a backend whose pinned buffer is a [`HostPinned`]:
/// copies through the backend's own `upload` and `download_into`, which
/// finish before they return. The one implementation cpu, torch and
/// vulkan share; expanded in the backend's `buffer.rs`, beside its
/// `BufferApi`.
macro_rules! host_pinned_api {
    ($A:ty) => {
        impl $crate::backend::PinnedApi for $A {
            type Pinned<T: $crate::element::Element> = $crate::backend::host_pinned::HostPinned<T>;

            fn pinned<T: $crate::element::Element>(
                _: &Self::Stream,
                len: usize,
            ) -> $crate::Result<Self::Pinned<T>> {
                $crate::backend::host_pinned::HostPinned::zeros(len)
            }

            fn pinned_len<T: $crate::element::Element>(pinned: &Self::Pinned<T>) -> usize {
                pinned.0.len()
            }

            fn pinned_slice<T: $crate::element::Element>(
                pinned: &Self::Pinned<T>,
            ) -> $crate::Result<&[T]> {
                Ok(&pinned.0)
            }

            fn pinned_slice_mut<T: $crate::element::Element>(
                pinned: &mut Self::Pinned<T>,
            ) -> $crate::Result<&mut [T]> {
                Ok(&mut pinned.0)
            }

            fn upload_pinned<T: $crate::element::Element>(
                stream: &Self::Stream,
                src: &Self::Pinned<T>,
                dst: &mut Self::Buffer<T>,
            ) -> $crate::Result<()> {
                <Self as $crate::backend::BufferApi>::upload(stream, &src.0, dst)
            }

            fn download_pinned<T: $crate::element::Element>(
                stream: &Self::Stream,
                src: &Self::Buffer<T>,
                dst: &mut Self::Pinned<T>,
            ) -> $crate::Result<()> {
                <Self as $crate::backend::BufferApi>::download_into(stream, src, &mut dst.0)
            }
        }
    };
}
pub(crate) use host_pinned_api;
