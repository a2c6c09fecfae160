//! `Device`: the one handle of the backends the public `Context` holds.
//!
//! It owns the dispatch enum of an opened device and does what a context
//! asks of its backend as a whole: opening the first backend of the
//! fallback chain that the caller's plan allows, checking an ordinal
//! before a backend is opened, and a sync that steps around streams
//! capturing a graph. Everything here is in terms of the public `Backend`,
//! so `Context` (context.rs) names neither a backend nor the dispatch.

use super::code::Program;
use super::dispatch::{DeviceImpl, StreamImpl};
use super::kind::{Backend, BackendAttempt, Outcome};
use crate::device::{DeviceInfo, MemoryInfo, MemoryStats};
use crate::error::{Error, Result};
use crate::kernel::options::{CompileOptions, ImageFormat};
use crate::kernel::signature::KernelDecl;

/// An opened device of whichever backend the fallback chain chose.
#[derive(Debug)]
pub(crate) struct Device {
    /// Open to the backends' files that match on it (comm.rs).
    pub(super) imp: DeviceImpl,
}

impl Device {
    /// The fallback chain: each backend of [`Backend::ALL`] in order,
    /// passed over with the reason `plan` gives (`Err`), or opened
    /// (`Ok(required)`: one the caller named fails the whole call when it
    /// does not open), until one opens. Returns it with every backend's
    /// outcome, for `Context::fallback_chain`.
    pub(crate) fn open_first(
        ordinal: usize,
        plan: impl Fn(Backend) -> std::result::Result<bool, String>,
    ) -> Result<(Device, Vec<BackendAttempt>)> {
        let mut chain = Vec::new();
        let mut chosen = None;
        for backend in Backend::ALL {
            let outcome = if chosen.is_some() {
                Outcome::NotTried
            } else {
                match plan(backend) {
                    Err(reason) => Outcome::Skipped(reason),
                    Ok(required) => match DeviceImpl::open_in_chain(backend, ordinal, required) {
                        Ok(imp) => {
                            chosen = Some(Device { imp });
                            Outcome::Chosen
                        }
                        // Asked for by name: the user wants this backend or an error.
                        Err(e) if required => return Err(e),
                        Err(e) => Outcome::Skipped(e.to_string()),
                    },
                }
            };
            chain.push(BackendAttempt { backend, outcome });
        }
        let device = chosen.ok_or_else(|| Error::BackendUnavailable {
            backend: Backend::HOST,
            reason: "no backend could be opened".into(),
        })?;
        Ok((device, chain))
    }

    /// `ordinal` against the devices `backend` is known to have before it
    /// opens (the host has one); a GPU backend checks when it opens.
    pub(crate) fn check_ordinal(backend: Backend, ordinal: usize) -> Result<()> {
        match backend.device_kind().known_device_count() {
            Some(available) if ordinal >= available => Err(Error::InvalidDevice {
                backend,
                asked: ordinal,
                available,
            }),
            _ => Ok(()),
        }
    }

    /// A context's sync: the device's, or where the backend refuses a
    /// device-wide sync while a stream captures a graph (CUDA: cuda-safe's
    /// graph.rs, rather than let the driver invalidate the capture), a
    /// wait for each of `streams` that does not capture: a capture
    /// enqueues nothing, so it is the same wait (vulkan and the CPU wait
    /// that way themselves).
    pub(crate) fn synchronize_beside_captures(&self, streams: &[StreamImpl]) -> Result<()> {
        match self.imp.synchronize() {
            Err(Error::Unsupported { what, .. }) if what.contains("capture a graph") => {
                let mut first = Ok(());
                for s in streams.iter().filter(|s| !s.is_capturing()) {
                    let r = s.sync();
                    if first.is_ok() {
                        first = r;
                    }
                }
                first
            }
            r => r,
        }
    }

    pub(crate) fn backend(&self) -> Backend {
        self.imp.backend()
    }

    pub(crate) fn info(&self) -> Result<DeviceInfo> {
        self.imp.info()
    }

    pub(crate) fn memory_info(&self) -> Result<MemoryInfo> {
        self.imp.memory_info()
    }

    pub(crate) fn memory_stats(&self) -> Result<MemoryStats> {
        self.imp.memory_stats()
    }

    pub(crate) fn empty_cache(&self) -> Result<usize> {
        self.imp.empty_cache()
    }

    pub(crate) fn same(&self, other: &Device) -> bool {
        self.imp.same(&other.imp)
    }

    pub(crate) fn default_stream(&self) -> Result<StreamImpl> {
        self.imp.default_stream()
    }

    pub(crate) fn new_stream(&self) -> Result<StreamImpl> {
        self.imp.new_stream()
    }

    pub(crate) fn compile(
        &self,
        source: &str,
        options: &CompileOptions,
        decls: &[KernelDecl],
    ) -> Result<Program> {
        self.imp.compile(source, options, decls)
    }

    pub(crate) fn load_image(&self, format: ImageFormat, bytes: &[u8]) -> Result<Program> {
        self.imp.load_image(format, bytes)
    }
}
