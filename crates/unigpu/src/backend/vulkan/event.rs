//! Events: a fence in a stream's work, and for timed events a GPU
//! timestamp written when the queue gets there (a timestamp query in an
//! empty compute pass, resolved and copied to a buffer the host maps). Two
//! timestamps of one queue share a clock, so `elapsed_ms` is their
//! difference times the queue's tick length.

use std::sync::{Arc, Mutex};

use super::Vulkan;
use super::device::VkDevice;
use super::fence::Fence;
use super::spin;
use super::stream::VkStream;
use super::wgpu_buffer::{MapSignal, read_mapped, readback};
use crate::backend::Backend;
use crate::backend::EventApi;
use crate::error::{Error, Result};
use crate::lock::lock;

/// Where a timed record's timestamp lands, and whether it has.
#[derive(Debug)]
struct Stamp {
    buffer: wgpu::Buffer,
    mapped: MapSignal,
}

impl Stamp {
    /// Ticks of the device's timestamp clock.
    fn ticks(&self) -> Result<u64> {
        self.mapped.wait("reading an event's timestamp")?;
        let mut bytes = [0u8; 8];
        read_mapped(&self.buffer, &mut bytes, "reading an event's timestamp")?;
        Ok(u64::from_ne_bytes(bytes))
    }
}

#[derive(Debug)]
struct Capture {
    fence: Fence,
    stamp: Option<Stamp>,
}

#[derive(Debug)]
pub(crate) struct VkEvent {
    timed: bool,
    device: Arc<VkDevice>,
    /// The latest record; `None` before the first.
    capture: Mutex<Option<Arc<Capture>>>,
}

impl VkEvent {
    pub(crate) fn new(device: &Arc<VkDevice>, timed: bool) -> VkEvent {
        VkEvent {
            timed,
            device: device.clone(),
            capture: Mutex::new(None),
        }
    }

    fn current(&self) -> Option<Arc<Capture>> {
        lock(&self.capture).clone()
    }

    pub(crate) fn fence(&self) -> Option<Fence> {
        self.current().map(|c| c.fence.clone())
    }

    fn record_timestamp(&self, stream: &VkStream) -> Result<Capture> {
        if stream.is_capturing() {
            return Err(super::stream::not_capturable("an event record"));
        }
        let device = &self.device.device;
        let queries = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("unigpu event"),
            ty: wgpu::QueryType::Timestamp,
            count: 1,
        });
        let resolved = super::wgpu_buffer::create(
            &self.device,
            8,
            8,
            wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            false,
        )?;
        let buffer = readback(&self.device, 8)?;
        let mapped = MapSignal::default();
        let (target, on_mapped) = (buffer.clone(), mapped.callback());
        let fence = stream.submit(
            &[],
            &[],
            Box::new(move |enc| {
                // An empty pass whose start writes the timestamp: after
                // everything before it on the queue (BOTTOM_OF_PIPE).
                drop(enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some("unigpu event"),
                    timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                        query_set: &queries,
                        beginning_of_pass_write_index: Some(0),
                        end_of_pass_write_index: None,
                    }),
                }));
                enc.resolve_query_set(&queries, 0..1, &resolved, 0);
                enc.copy_buffer_to_buffer(&resolved, 0, &target, 0, 8);
                enc.map_buffer_on_submit(&target, wgpu::MapMode::Read, .., on_mapped);
                Ok(())
            }),
        )?;
        Ok(Capture {
            fence,
            stamp: Some(Stamp { buffer, mapped }),
        })
    }

    /// Like cuEventQuery: true when never recorded or when reached.
    pub(crate) fn query(&self) -> bool {
        self.fence().is_none_or(|f| f.is_done())
    }

    fn ticks(&self, which: &str) -> Result<u64> {
        let capture = self.current().ok_or_else(|| Error::StreamWork {
            message: format!("elapsed_ms: the {which} event was never recorded"),
        })?;
        match &capture.stamp {
            Some(stamp) => stamp.ticks(),
            None if !self.device.has(wgpu::Features::TIMESTAMP_QUERY) => Err(Error::Unsupported {
                backend: Backend::Vulkan,
                what: format!(
                    "elapsed_ms: adapter {} has no timestamp queries (wgpu's TIMESTAMP_QUERY), \
                     so its events are not timed; time on the host around a sync instead",
                    self.device.info.name
                ),
            }),
            None => Err(Error::Unsupported {
                backend: Backend::Vulkan,
                what: "elapsed_ms: an event made by record or create_event has no timestamp; \
                       make both with record_timed or create_timing_event"
                    .into(),
            }),
        }
    }
}

impl EventApi for Vulkan {
    fn new_event(stream: &Self::Stream, timed: bool) -> Result<Self::Event> {
        Ok(Arc::new(VkEvent::new(&stream.device, timed)))
    }

    fn record(event: &Self::Event, stream: &Self::Stream) -> Result<()> {
        if !Arc::ptr_eq(&event.device, &stream.device) {
            return Err(Error::ContextMismatch {
                what: "Event::record",
            });
        }
        let timestamps = event.device.has(wgpu::Features::TIMESTAMP_QUERY);
        let capture = if event.timed && timestamps {
            event.record_timestamp(stream)?
        } else {
            Capture {
                fence: stream.marker()?,
                stamp: None,
            }
        };
        *lock(&event.capture) = Some(Arc::new(capture));
        Ok(())
    }

    fn event_sync(event: &Self::Event) -> Result<()> {
        if let Some(f) = event.fence() {
            spin::poll_until(&event.device.device, || f.is_done());
            f.wait_done();
        }
        Ok(())
    }

    fn event_query(event: &Self::Event) -> Result<bool> {
        Ok(event.query())
    }

    fn elapsed_ms(start: &Self::Event, end: &Self::Event) -> Result<f32> {
        let (a, b) = (start.ticks("start")?, end.ticks("end")?);
        let ns_per_tick = f64::from(start.device.queue.get_timestamp_period());
        let ticks = b as f64 - a as f64;
        Ok((ticks * ns_per_tick / 1e6) as f32)
    }
}
