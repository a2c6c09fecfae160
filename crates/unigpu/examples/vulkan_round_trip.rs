//! The floor under the vulkan backend's launch + sync round trip: an
//! empty dispatch through wgpu alone, on the first Vulkan adapter (set
//! `VK_DRIVER_FILES` to pick a driver), waited for three ways, also
//! beside a second thread blocked in the driver's wait and submitted from
//! a second thread, beside unigpu's own round trip in the same process
//! (docs/vulkan.md, "Round trips"). A measurement probe, not an example of the API: it uses wgpu
//! directly.
//!
//! `cargo run --release -p unigpu --features vulkan --example vulkan_round_trip`

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll, Wake, Waker};
use std::time::Instant;

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// wgpu's native futures are ready at once or after a wake; no runtime.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = TaskContext::from_waker(&waker);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

const ROUNDS: usize = 2000;

/// The median of `ROUNDS` timings of `f`, in µs, after 200 untimed.
fn median_us(mut f: impl FnMut()) -> f64 {
    for _ in 0..200 {
        f();
    }
    let mut t: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[ROUNDS / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        flags: wgpu::InstanceFlags::empty(),
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN))
        .into_iter()
        .next()
        .ok_or("no Vulkan adapter")?;
    println!("adapter: {}", adapter.get_info().name);
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: None,
        source: wgpu::ShaderSource::Wgsl("@compute @workgroup_size(1) fn main() {}".into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: None,
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let submit = || {
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.dispatch_workgroups(1, 1, 1);
        }
        queue.submit([encoder.finish()]);
    };
    let record_submit = median_us(|| {
        submit();
        device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    });
    println!("wgpu: record + submit + poll(wait) {record_submit:.2} µs");
    let spin = median_us(|| {
        submit();
        while !device.poll(wgpu::PollType::Poll).unwrap().is_queue_empty() {}
    });
    println!("wgpu: record + submit + poll(Poll) until the queue is empty {spin:.2} µs");
    let done = Arc::new(AtomicBool::new(false));
    let until_callback = || {
        done.store(false, Ordering::Relaxed);
        let flag = done.clone();
        submit();
        queue.on_submitted_work_done(move || flag.store(true, Ordering::Release));
        while !done.load(Ordering::Acquire) {
            let _ = device.poll(wgpu::PollType::Poll);
        }
    };
    let callback = median_us(until_callback);
    println!("wgpu: record + submit + poll(Poll) until its callback ran {callback:.2} µs");
    // The same while a second thread blocks in poll(wait) whenever work is
    // in flight, as the vulkan backend's poller thread does: whether one
    // thread's wait in the driver holds up another's submission or polls.
    let stop = Arc::new(AtomicBool::new(false));
    let waiter = {
        let (device, stop) = (device.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let _ = device.poll(wgpu::PollType::wait_indefinitely());
                std::thread::yield_now();
            }
        })
    };
    let beside_waiter = median_us(until_callback);
    stop.store(true, Ordering::Relaxed);
    waiter.join().map_err(|_| "the waiting thread panicked")?;
    println!("wgpu: the same while another thread waits in poll(wait) {beside_waiter:.2} µs");
    // The same with the recording and submission on a second thread that
    // checks a channel between yields, as a vulkan stream's worker does
    // (spin.rs): what handing the work over costs.
    let (tx, rx) = std::sync::mpsc::channel::<Option<Arc<AtomicBool>>>();
    let worker = {
        let (device, queue, pipeline) = (device.clone(), queue.clone(), pipeline.clone());
        std::thread::spawn(move || {
            loop {
                let flag = match rx.try_recv() {
                    Ok(Some(flag)) => flag,
                    Ok(None) | Err(std::sync::mpsc::TryRecvError::Disconnected) => return,
                    Err(std::sync::mpsc::TryRecvError::Empty) => {
                        std::thread::yield_now();
                        continue;
                    }
                };
                let mut encoder = device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&pipeline);
                    pass.dispatch_workgroups(1, 1, 1);
                }
                encoder.on_submitted_work_done(move || flag.store(true, Ordering::Release));
                queue.submit([encoder.finish()]);
            }
        })
    };
    let handed_over = median_us(|| {
        done.store(false, Ordering::Relaxed);
        tx.send(Some(done.clone())).expect("the worker is running");
        while !done.load(Ordering::Acquire) {
            let _ = device.poll(wgpu::PollType::Poll);
        }
    });
    tx.send(None).expect("the worker is running");
    worker.join().map_err(|_| "the worker thread panicked")?;
    println!(
        "wgpu: the same, recorded and submitted by a second, spinning thread {handed_over:.2} µs"
    );
    let idle_poll = median_us(|| {
        let _ = device.poll(wgpu::PollType::Poll);
    });
    println!("wgpu: one poll(Poll) of an idle device {idle_poll:.2} µs");
    let only_submit = median_us(submit);
    device.poll(wgpu::PollType::wait_indefinitely())?;
    println!("wgpu: record + submit alone {only_submit:.2} µs");

    let ctx = unigpu::Context::new(unigpu::Backend::Vulkan, 0)?;
    let kernel = ctx
        .compile("extern \"C\" __global__ void empty() {}\n")?
        .kernel("empty")?
        .with_wgsl("@compute @workgroup_size(1) fn empty() {}\n")?;
    let stream = ctx.create_stream()?;
    let grid = unigpu::Grid::new((1, 1, 1), (1, 1, 1));
    let ours = median_us(|| {
        stream.launch(&kernel, grid, ()).unwrap();
        stream.sync().unwrap();
    });
    println!(
        "unigpu ({}): launch + sync round trip {ours:.2} µs",
        ctx.device_name()?
    );
    Ok(())
}
