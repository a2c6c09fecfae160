//! Host memory standing in for device memory, with the same ordering rules
//! cudarc applies to device buffers: work that writes a buffer waits for
//! every earlier use of it, work that reads waits for the last write.

use std::sync::Arc;

use unigpu_core::dlpack::{HostArray, HostMem};

use super::Cpu;
use super::fence::Fence;
use super::memory::try_alloc_vec;
use super::stream::{CpuStream, Recorded};
pub(crate) use super::tracker::Tracker;
use crate::backend::Backend;
use crate::backend::BufferApi;
use crate::backend::unified::not_unified;
use crate::device::Location;
use crate::dlpack::sync::DlpackSync;
use crate::{Element, Error, Result};
use unigpu_core::dlpack::{HostExport, ManagedTensor};

/// Refuses work that writes `written` while it also uses `others`, when
/// one of them is the same memory. Safe Rust cannot pass one array as `&`
/// and `&mut`, and the C API refuses one handle twice, but an array and
/// its own DLPack export imported again are two arrays over one memory and
/// one lock: the job would take that lock twice and never finish (found by
/// the capi_calls fuzz target, docs/fuzzing.md).
/// `what` names the call, for the error.
pub(crate) fn check_distinct<T: Element>(
    what: impl FnOnce() -> String,
    written: &CpuBuffer<T>,
    others: &[&CpuBuffer<T>],
) -> Result<()> {
    if others
        .iter()
        .any(|o| HostArray::ptr_eq(&written.data, &o.data))
    {
        return Err(shared_memory(&what()));
    }
    Ok(())
}

fn shared_memory(what: &str) -> Error {
    Error::Unsupported {
        backend: Backend::Cpu,
        what: format!(
            "{what} writes an array that shares its memory with another of its operands \
             (an array and its own DLPack export imported again); use one of the two, \
             or copy one first"
        ),
    }
}

/// Like [`submit`], for work a graph may replay: while `stream` captures,
/// the work is recorded instead of run.
pub(crate) fn submit_replayable(
    stream: &CpuStream,
    reads: &[&Tracker],
    writes: &[&Tracker],
    work: impl Fn() -> Result<()> + Send + Sync + 'static,
) -> Result<()> {
    let recorded = Recorded {
        reads: reads.iter().map(|&t| t.clone()).collect(),
        writes: writes.iter().map(|&t| t.clone()).collect(),
        work: Arc::new(work),
    };
    match stream.record_if_capturing(recorded) {
        None => Ok(()),
        Some(r) => replay(stream, &r),
    }
}

/// Submits recorded work on `stream`, ordered after the current uses of
/// what it reads and writes.
pub(crate) fn replay(stream: &CpuStream, r: &Recorded) -> Result<()> {
    let reads: Vec<&Tracker> = r.reads.iter().collect();
    let writes: Vec<&Tracker> = r.writes.iter().collect();
    let work = r.work.clone();
    submit(stream, &reads, &writes, move || work()).map(drop)
}

/// Enqueues `work` on `stream` after the uses of `reads` and `writes` it
/// must follow, and records it as their latest use. Returns the fence
/// the work signals when it is done. Refused while `stream` captures (see
/// [`submit_replayable`]).
pub(crate) fn submit(
    stream: &CpuStream,
    reads: &[&Tracker],
    writes: &[&Tracker],
    work: impl FnOnce() -> Result<()> + Send + 'static,
) -> Result<Fence> {
    let mut deps: Vec<Fence> = reads.iter().filter_map(|t| t.pending_write()).collect();
    deps.extend(writes.iter().flat_map(|t| t.pending_all()));
    let done = Fence::default();
    let signal = done.clone();
    stream.enqueue(Box::new(move || {
        // Signalled even on failure or a panic in `work` (the stream's
        // worker catches it), so later work and waiting hosts are never
        // stuck on it.
        let _signal = SignalOnDrop(signal);
        for d in &deps {
            d.wait();
        }
        work()
    }))?;
    for t in reads {
        t.note_read(&done);
    }
    for t in writes {
        t.note_write(&done);
    }
    Ok(done)
}

/// A CPU-backend array's storage.
#[derive(Debug)]
pub(crate) struct CpuBuffer<T: Element> {
    pub(crate) data: HostArray<T>,
    pub(crate) uses: Tracker,
    /// `data.len()`, kept so that asking needs no lock.
    len: usize,
    /// Made by `alloc_unified`: the host may view it.
    pub(crate) unified: bool,
}

impl<T: Element> CpuBuffer<T> {
    fn from_vec(v: Vec<T>) -> Self {
        Self::from_mem(HostMem::from(v))
    }

    /// Host memory from elsewhere (a DLPack import), with no pending uses.
    pub(crate) fn from_mem(mem: HostMem<T>) -> Self {
        Self::shared(HostArray::new(mem), Tracker::default())
    }

    /// Another array's memory and use tracking (its own DLPack export
    /// coming back), so that work through either is ordered as one array's.
    pub(crate) fn shared(data: HostArray<T>, uses: Tracker) -> Self {
        CpuBuffer {
            len: data.len(),
            data,
            uses,
            unified: false,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Copies out after pending writes finish.
    pub(crate) fn read_into(&self, host: &mut [T]) {
        self.uses.wait_writes();
        host.copy_from_slice(&self.data.read());
    }

    /// Copies in after every pending use finishes.
    pub(crate) fn write_from(&self, host: &[T]) {
        self.uses.wait_all();
        self.data.write().copy_from_slice(host);
    }
}

/// Signals its fence when dropped, so that a job waiting on it is never
/// left waiting.
struct SignalOnDrop(Fence);

impl Drop for SignalOnDrop {
    fn drop(&mut self) {
        self.0.signal();
    }
}

impl BufferApi for Cpu {
    // `alloc` is the contract's default, `zeros`: host memory must be
    // initialised to be safe Rust, and zeroing it is the cheapest way.
    fn zeros<T: Element>(_: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        Ok(CpuBuffer::from_vec(try_alloc_vec(len)?))
    }

    fn from_host<T: Element>(_: &Self::Stream, host: &[T]) -> Result<Self::Buffer<T>> {
        let mut v = try_alloc_vec(host.len())?;
        v.copy_from_slice(host);
        Ok(CpuBuffer::from_vec(v))
    }

    fn len<T: Element>(buffer: &Self::Buffer<T>) -> usize {
        buffer.len()
    }

    fn read<T: Element>(_: &Self::Stream, src: &Self::Buffer<T>, host: &mut [T]) -> Result<()> {
        src.read_into(host);
        Ok(())
    }

    fn write<T: Element>(_: &Self::Stream, dst: &mut Self::Buffer<T>, host: &[T]) -> Result<()> {
        dst.write_from(host);
        Ok(())
    }

    fn upload<T: Element>(
        stream: &Self::Stream,
        host: &[T],
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        let staged = stream.staging().copy_of(host)?;
        let (data, staging) = (dst.data.clone(), stream.staging().clone());
        submit(stream, &[], &[&dst.uses], move || {
            bytemuck::cast_slice_mut::<T, u8>(&mut data.write()).copy_from_slice(&staged);
            staging.give_back(staged);
            Ok(())
        })
        .map(drop)
    }

    fn download_into<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        host: &mut [T],
    ) -> Result<()> {
        // `host` is borrowed, so the worker cannot write it. Rather than
        // have the worker copy into a staging vector for this thread to
        // copy again, the worker waits for the work before the download,
        // then holds the stream while this thread copies straight out of
        // the buffer: one copy and no allocation, still ordered on the
        // stream (a later writer of `src` waits for the job to end).
        let (reached, copied) = (Fence::default(), Fence::default());
        let (at_download, until_copied) = (reached.clone(), copied.clone());
        submit(stream, &[&src.uses], &[], move || {
            at_download.signal();
            until_copied.wait();
            Ok(())
        })?;
        // Releases the worker however this thread leaves.
        let _release = SignalOnDrop(copied);
        reached.wait();
        host.copy_from_slice(&src.data.read());
        Ok(())
    }

    fn copy<T: Element>(
        stream: &Self::Stream,
        src: &Self::Buffer<T>,
        dst: &mut Self::Buffer<T>,
    ) -> Result<()> {
        super::check_distinct(|| "copy".into(), dst, &[src])?;
        let (from, to) = (src.data.clone(), dst.data.clone());
        submit_replayable(stream, &[&src.uses], &[&dst.uses], move || {
            to.write().copy_from_slice(&from.read());
            Ok(())
        })
    }

    /// Ordinary host memory: the host is the device.
    fn alloc_unified<T: Element>(stream: &Self::Stream, len: usize) -> Result<Self::Buffer<T>> {
        let mut buffer = Self::zeros::<T>(stream, len)?;
        buffer.unified = true;
        Ok(buffer)
    }

    fn is_unified<T: Element>(buffer: &Self::Buffer<T>) -> bool {
        buffer.unified
    }

    fn host_view<T: Element>(buffer: &Self::Buffer<T>) -> Result<Self::HostView<'_, T>> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        buffer.uses.wait_writes();
        Ok(buffer.data.read())
    }

    fn host_view_mut<T: Element>(buffer: &mut Self::Buffer<T>) -> Result<Self::HostViewMut<'_, T>> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        buffer.uses.wait_all();
        Ok(buffer.data.write())
    }

    /// Nothing to move: the memory is the host's, which is the device.
    fn prefetch<T: Element>(_: &Self::Stream, buffer: &Self::Buffer<T>, _: Location) -> Result<()> {
        if !buffer.unified {
            return Err(not_unified(Backend::Cpu));
        }
        Ok(())
    }

    fn to_dlpack<T: Element>(
        _: &Self::Stream,
        buffer: &mut Self::Buffer<T>,
        sync: DlpackSync<'_>,
    ) -> Result<ManagedTensor> {
        match sync {
            DlpackSync::Host => buffer.uses.wait_all(),
            DlpackSync::Unordered => {}
            DlpackSync::Stream(_) => {
                return Err(Error::Dlpack {
                    message: "a CPU array cannot be ordered on a CUDA stream (a CPU consumer passes no stream)".into(),
                });
            }
        }
        // The tracker travels with the tensor, so that an import of it in
        // this process orders its work with the original's.
        Ok(buffer.data.to_dlpack_with(buffer.uses.clone()))
    }

    fn from_dlpack<T: Element>(_: &Self::Stream, tensor: ManagedTensor) -> Result<Self::Buffer<T>> {
        let view = tensor.view()?;
        Ok(match tensor.owner::<HostExport<T, Tracker>>() {
            // Our own export coming back whole: share the array's memory
            // through its lock, and its use tracking, rather than alias it
            // with a second array that orders its work on its own. (One
            // whose start or length a consumer changed is a slice of it.)
            Some(export) if export.spans(&view) => {
                CpuBuffer::shared(export.array.clone(), export.with.clone())
            }
            _ => CpuBuffer::from_mem(HostMem::from_dlpack(tensor)?),
        })
    }
}

crate::backend::host_pinned::host_pinned_api!(Cpu);
