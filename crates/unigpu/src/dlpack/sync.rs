//! How a DLPack export is ordered before its consumer: a plain value that
//! the public `to_dlpack` and every backend's export share.

/// A CUDA stream another library owns, by handle (`unsafe`
/// `ForeignStream::from_raw`, whose caller vouches for the handle).
#[cfg(feature = "cuda")]
pub use unigpu_cuda_safe::ForeignStream;

/// A CUDA stream another library owns: there are none in a build without
/// the `cuda` feature, so [`DlpackSync::Stream`] cannot be made.
#[cfg(not(feature = "cuda"))]
#[derive(Debug)]
pub enum ForeignStream {}

/// How an export is ordered before the consumer's first use, as the
/// `stream` argument of `__dlpack__` asks.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum DlpackSync<'a> {
    /// Block until every pending use of the array is done (a consumer on
    /// the host, or one that gave no stream).
    Host,
    /// Make this CUDA stream (the consumer's) wait for the pending uses;
    /// nothing blocks.
    Stream(&'a ForeignStream),
    /// No ordering: the consumer has arranged it (DLPack's `stream=-1`).
    Unordered,
}
