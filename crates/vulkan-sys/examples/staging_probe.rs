//! How fast the host writes into and reads out of the memory wgpu maps for
//! transfers, beside ordinary memory: what bounds the vulkan backend's
//! uploads and downloads from ordinary memory (backend/vulkan/transfer.rs,
//! docs/vulkan.md, "Transfers"). On the first Vulkan adapter (set
//! `VK_DRIVER_FILES` to pick a driver), 16 MiB at a time, copied by 1 to
//! 16 threads in 256 KiB pieces as the backend copies:
//! - `vec -> vec`: one ordinary allocation into another (both warm);
//! - `vec -> MAP_WRITE`: into a `MAP_WRITE | COPY_SRC` buffer mapped for
//!   writing again after each round (as an upload's staging slot is);
//! - `MAP_READ -> vec`: out of a `MAP_READ | COPY_DST` buffer mapped for
//!   reading after a GPU copy into it (as a download's slot is).
//!
//! Every copy is checked. A measurement probe, not an example of the API.
//! `cargo run --release -p unigpu-vulkan-sys --example staging_probe [MiB]`

use std::time::Instant;

mod common;
use common::{block_on, first_adapter};

const PIECE: usize = 256 << 10;
const ROUNDS: usize = 7;

/// Copies `src` into `dst` on `threads` threads, piece by piece.
fn write_split(dst: wgpu::WriteOnly<'_, [u8]>, src: &[u8], threads: usize) {
    let (pieces, _) = dst.into_chunks::<PIECE>();
    let mut pieces: Vec<_> = pieces.into_iter().enumerate().collect();
    let per = pieces.len().div_ceil(threads);
    std::thread::scope(|s| {
        while !pieces.is_empty() {
            let mine: Vec<_> = pieces.drain(..per.min(pieces.len())).collect();
            s.spawn(move || {
                for (i, d) in mine {
                    wgpu::WriteOnly::<[u8]>::from(d).copy_from_slice(&src[i * PIECE..][..PIECE]);
                }
            });
        }
    });
}

/// Copies `src` into `dst` on `threads` threads, piece by piece.
fn copy_split(dst: &mut [u8], src: &[u8], threads: usize) {
    let per = dst.len().div_ceil(PIECE).div_ceil(threads) * PIECE;
    std::thread::scope(|s| {
        for (d, sc) in dst.chunks_mut(per).zip(src.chunks(per)) {
            s.spawn(move || {
                for (d, sc) in d.chunks_mut(PIECE).zip(sc.chunks(PIECE)) {
                    d.copy_from_slice(sc);
                }
            });
        }
    });
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mib: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(16);
    let bytes = mib << 20;
    let adapter = first_adapter()?;
    println!("adapter: {}, {mib} MiB a copy", adapter.get_info().name);
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))?;
    let src: Vec<u8> = (0..bytes).map(|i| (i * 7 + i / 4093) as u8).collect();
    let mut plain = vec![0u8; bytes];
    let up = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes as u64,
        usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: true,
    });
    let gpu = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes as u64,
        usage: wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let down = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let gbps = |secs: f64| bytes as f64 / secs / 1e9;
    println!("| threads | vec -> vec (GB/s) | vec -> MAP_WRITE | MAP_READ -> vec |");
    println!("|---|---|---|---|");
    for threads in [1, 2, 4, 8, 16] {
        let (mut plain_rates, mut write_rates, mut read_rates) = (vec![], vec![], vec![]);
        for _ in 0..ROUNDS {
            plain.fill(0);
            let t = Instant::now();
            copy_split(&mut plain, &src, threads);
            plain_rates.push(gbps(t.elapsed().as_secs_f64()));
            assert!(plain == src, "vec -> vec lost bytes");

            let t = Instant::now();
            {
                let mut view = up.get_mapped_range_mut(..)?;
                write_split(view.slice(..), &src, threads);
            }
            write_rates.push(gbps(t.elapsed().as_secs_f64()));
            up.unmap();
            // Through the GPU into the readback buffer, which also checks
            // what was written.
            let mut enc = device.create_command_encoder(&Default::default());
            enc.copy_buffer_to_buffer(&up, 0, &gpu, 0, bytes as u64);
            enc.copy_buffer_to_buffer(&gpu, 0, &down, 0, bytes as u64);
            queue.submit([enc.finish()]);
            down.map_async(wgpu::MapMode::Read, .., |r| r.expect("map for reading"));
            up.map_async(wgpu::MapMode::Write, .., |r| r.expect("map for writing"));
            device.poll(wgpu::PollType::wait_indefinitely())?;
            plain.fill(0);
            let t = Instant::now();
            {
                let view = down.get_mapped_range(..)?;
                copy_split(&mut plain, &view, threads);
            }
            read_rates.push(gbps(t.elapsed().as_secs_f64()));
            down.unmap();
            assert!(plain == src, "the round trip through the GPU lost bytes");
        }
        println!(
            "| {threads} | {:.1} | {:.1} | {:.1} |",
            median(plain_rates),
            median(write_rates),
            median(read_rates)
        );
    }
    Ok(())
}
