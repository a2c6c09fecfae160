//! What one local rank brings to a collective or a send/recv: a stream
//! and memory, either this crate's ([`Part`], [`P2p`]: buffers ordered by
//! their own use records) or another library's ([`ForeignPart`],
//! [`ForeignP2p`]: torch's tensors on c10 streams, ordered by their owner
//! before the call). The ops take either through the sealed traits
//! [`CollectivePart`] and [`PointToPoint`], so each op is written once.

use std::marker::PhantomData;

use cudarc::driver::{result, sys};

use crate::error::{Context as _, Result, SafeError};
use crate::event_pool::PooledEvent;
use crate::uses::UseEnd;
use crate::{CudaDevice, CudaStreamHandle, DeviceBuffer, Element, ForeignStream};

/// One local rank's share of a collective: its stream, what it sends
/// (`None`: in place, from `recv`), and where the result goes.
#[derive(Debug)]
pub struct Part<'a, T: Element> {
    pub stream: &'a CudaStreamHandle,
    pub send: Option<&'a DeviceBuffer<T>>,
    pub recv: &'a mut DeviceBuffer<T>,
}

/// One point-to-point transfer of a local rank (`local` counts from the
/// communicator's first rank) with the rank `peer`.
#[derive(Debug)]
pub enum P2p<'a, T: Element> {
    Send {
        local: usize,
        stream: &'a CudaStreamHandle,
        buffer: &'a DeviceBuffer<T>,
        peer: usize,
    },
    Recv {
        local: usize,
        stream: &'a CudaStreamHandle,
        buffer: &'a mut DeviceBuffer<T>,
        peer: usize,
    },
}

/// Device memory another library owns (a torch tensor's storage), by
/// address: `len` elements of `T`. Its uses are ordered, and it is kept
/// allocated until the work on it is done, by its owner's rules (torch's
/// caching allocator and `record_stream`), not by this crate.
#[derive(Debug, Clone, Copy)]
pub struct ForeignMemory<T: Element> {
    address: u64,
    len: usize,
    _element: PhantomData<fn() -> T>,
}

impl<T: Element> ForeignMemory<T> {
    /// `len` elements of `T` at device address `address`.
    ///
    /// # Safety
    /// `address` is the start of at least `len` elements of `T` of device
    /// memory of the device of every stream it is used with, and its owner
    /// keeps that memory allocated until every use enqueued here is done,
    /// and orders those uses after its other uses of it.
    pub unsafe fn from_raw(address: u64, len: usize) -> Self {
        ForeignMemory {
            address,
            len,
            _element: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// [`Part`] on another library's stream and memory.
#[derive(Debug)]
pub struct ForeignPart<'a, T: Element> {
    pub stream: &'a ForeignStream,
    pub send: Option<ForeignMemory<T>>,
    pub recv: ForeignMemory<T>,
}

/// [`P2p`] on another library's stream and memory.
#[derive(Debug)]
pub enum ForeignP2p<'a, T: Element> {
    Send {
        local: usize,
        stream: &'a ForeignStream,
        memory: ForeignMemory<T>,
        peer: usize,
    },
    Recv {
        local: usize,
        stream: &'a ForeignStream,
        memory: ForeignMemory<T>,
        peer: usize,
    },
}

/// A local rank's share of a collective: [`Part`] or [`ForeignPart`].
pub trait CollectivePart<'a, T: Element>: sealed::Part<'a, T> {}
impl<'a, T: Element> CollectivePart<'a, T> for Part<'a, T> {}
impl<'a, T: Element> CollectivePart<'a, T> for ForeignPart<'a, T> {}

/// One send or receive: [`P2p`] or [`ForeignP2p`].
pub trait PointToPoint<'a, T: Element>: sealed::P2p<'a, T> {}
impl<'a, T: Element> PointToPoint<'a, T> for P2p<'a, T> {}
impl<'a, T: Element> PointToPoint<'a, T> for ForeignP2p<'a, T> {}

pub(super) use sealed::OnStream;

/// The traits' methods, out of users' reach so that only this file's
/// types can be passed (their addresses are trusted by the ops).
mod sealed {
    use super::*;

    /// The stream a call is enqueued on.
    #[derive(Debug, Clone, Copy)]
    pub enum OnStream<'s> {
        Owned(&'s CudaStreamHandle),
        Foreign(&'s ForeignStream),
    }

    /// One side of a send/recv, with its memory ordered on its stream.
    #[derive(Debug)]
    pub struct Side {
        pub local: usize,
        pub peer: usize,
        pub address: u64,
        pub len: usize,
        pub sends: bool,
        pub end: UseEnd,
    }

    pub trait Part<'a, T: Element> {
        fn stream(&self) -> OnStream<'a>;
        /// `(send length, if any; recv length)`.
        fn lens(&self) -> (Option<usize>, usize);
        /// `(send, recv)` device addresses (send is recv in place), after
        /// ordering both on the stream; the ends are dropped once the call
        /// is enqueued.
        fn addresses(&mut self, ends: &mut Vec<UseEnd>) -> Result<(u64, u64)>;
    }

    pub trait P2p<'a, T: Element> {
        fn stream(&self) -> OnStream<'a>;
        /// `(local rank, peer)`.
        fn ranks(&self) -> (usize, usize);
        fn side(&mut self) -> Result<Side>;
    }

    impl<'a, T: Element> Part<'a, T> for super::Part<'a, T> {
        fn stream(&self) -> OnStream<'a> {
            OnStream::Owned(self.stream)
        }

        fn lens(&self) -> (Option<usize>, usize) {
            (self.send.map(DeviceBuffer::len), self.recv.len())
        }

        fn addresses(&mut self, ends: &mut Vec<UseEnd>) -> Result<(u64, u64)> {
            let (recv, end) = self.recv.ptr_for_write(self.stream)?;
            ends.push(end);
            let send = match self.send {
                Some(s) => {
                    let (ptr, end) = s.ptr_for_read(self.stream)?;
                    ends.push(end);
                    ptr
                }
                None => recv,
            };
            Ok((send, recv))
        }
    }

    impl<'a, T: Element> Part<'a, T> for ForeignPart<'a, T> {
        fn stream(&self) -> OnStream<'a> {
            OnStream::Foreign(self.stream)
        }

        fn lens(&self) -> (Option<usize>, usize) {
            (self.send.map(|s| s.len), self.recv.len)
        }

        /// The owner ordered the memory before the call.
        fn addresses(&mut self, _: &mut Vec<UseEnd>) -> Result<(u64, u64)> {
            let recv = self.recv.address;
            Ok((self.send.map_or(recv, |s| s.address), recv))
        }
    }

    impl<'a, T: Element> P2p<'a, T> for super::P2p<'a, T> {
        fn stream(&self) -> OnStream<'a> {
            match self {
                Self::Send { stream, .. } | Self::Recv { stream, .. } => OnStream::Owned(stream),
            }
        }

        fn ranks(&self) -> (usize, usize) {
            match self {
                Self::Send { local, peer, .. } | Self::Recv { local, peer, .. } => (*local, *peer),
            }
        }

        fn side(&mut self) -> Result<Side> {
            let (local, peer) = self.ranks();
            let (address, len, sends, end) = match self {
                Self::Send { stream, buffer, .. } => {
                    let (p, end) = buffer.ptr_for_read(stream)?;
                    (p, buffer.len(), true, end)
                }
                Self::Recv { stream, buffer, .. } => {
                    let (p, end) = buffer.ptr_for_write(stream)?;
                    (p, buffer.len(), false, end)
                }
            };
            Ok(Side {
                local,
                peer,
                address,
                len,
                sends,
                end,
            })
        }
    }

    impl<'a, T: Element> P2p<'a, T> for ForeignP2p<'a, T> {
        fn stream(&self) -> OnStream<'a> {
            match self {
                Self::Send { stream, .. } | Self::Recv { stream, .. } => OnStream::Foreign(stream),
            }
        }

        fn ranks(&self) -> (usize, usize) {
            match self {
                Self::Send { local, peer, .. } | Self::Recv { local, peer, .. } => (*local, *peer),
            }
        }

        fn side(&mut self) -> Result<Side> {
            let (local, peer) = self.ranks();
            let (memory, sends) = match self {
                Self::Send { memory, .. } => (*memory, true),
                Self::Recv { memory, .. } => (*memory, false),
            };
            Ok(Side {
                local,
                peer,
                address: memory.address,
                len: memory.len,
                sends,
                end: UseEnd::none(),
            })
        }
    }
}

impl OnStream<'_> {
    pub(super) fn device(&self) -> &CudaDevice {
        match self {
            OnStream::Owned(s) => s.device(),
            OnStream::Foreign(s) => s.device(),
        }
    }

    pub(super) fn bind(&self) -> Result<()> {
        match self {
            OnStream::Owned(s) => s.bind(),
            OnStream::Foreign(s) => s.bind(),
        }
    }

    pub(super) fn cu_stream(&self) -> sys::CUstream {
        match self {
            OnStream::Owned(s) => s.cu_stream(),
            OnStream::Foreign(s) => s.cu_stream(),
        }
    }

    /// Refuses a collective while the stream captures a graph: NCCL's work
    /// would be captured, and its deadline could not be kept.
    pub(super) fn refuse_capture(&self) -> Result<()> {
        match self {
            OnStream::Owned(s) => s
                .device()
                .captures()
                .refuse(s.cudarc_stream(), "a collective"),
            OnStream::Foreign(s) => {
                s.bind()?;
                // SAFETY: the stream is valid (`ForeignStream::from_raw`'s
                // contract) and its context is bound.
                let status = unsafe { result::stream::is_capturing(s.cu_stream()) }
                    .call("cuStreamIsCapturing")?;
                if status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE {
                    return Ok(());
                }
                Err(SafeError::Unsupported {
                    what: "a collective while the stream captures a graph: its deadline could \
                           not be kept in a replay; enqueue it before begin_capture or after \
                           end_capture"
                        .into(),
                })
            }
        }
    }

    /// Records `event` after the work enqueued on the stream so far.
    pub(super) fn record(&self, event: &PooledEvent) -> Result<()> {
        match self {
            OnStream::Owned(s) => event
                .event()
                .record(s.cudarc_stream())
                .call("cuEventRecord"),
            OnStream::Foreign(s) => {
                s.bind()?;
                // SAFETY: the stream is valid (`ForeignStream::from_raw`'s
                // contract) and bound; the pooled event is alive for the
                // call.
                unsafe { result::event::record(event.event().cu_event(), s.cu_stream()) }
                    .call("cuEventRecord")
            }
        }
    }
}
