//! The CUDA backend's caching allocator as users see it: statistics that
//! add up, memory reused and released, out of memory that empties the cache
//! and reports the true free bytes, and data intact through reuse.

mod common;

use common::{assert_same, random_vec};
use rand::Rng;
use unigpu::{Backend, Error, GpuArray};

on_every_backend!(memory_stats_add_up_and_empty_cache_releases, |ctx| {
    if ctx.backend() != Backend::Cuda {
        // Backends without their own allocator say so, and have nothing
        // cached to release.
        match ctx.memory_stats() {
            Err(Error::Unsupported { what, .. }) => assert!(what.contains("memory_stats")),
            other => panic!("memory_stats on {}: {other:?}", ctx.backend()),
        }
        match ctx.backend() {
            Backend::Cpu => assert_eq!(ctx.empty_cache().unwrap(), 0),
            // torch's cache is its own, and the bridge cannot empty it.
            Backend::Torch => match ctx.empty_cache() {
                Err(Error::Unsupported { what, .. }) => assert!(what.contains("empty_cache")),
                other => panic!("empty_cache on torch: {other:?}"),
            },
            _ => {}
        }
        return;
    }
    ctx.sync().unwrap();
    let before = ctx.memory_stats().unwrap();
    let mut rng = rand::rng();
    let sizes: Vec<usize> = (0..64)
        .map(|_| match rng.random_range(0..3) {
            0 => rng.random_range(1..4096),
            1 => rng.random_range(4096..(1 << 20)),
            _ => rng.random_range((1 << 20)..(24 << 20)),
        })
        .collect();
    let hosts: Vec<Vec<f32>> = sizes.iter().map(|&n| random_vec::<f32>(n)).collect();
    let arrays: Vec<GpuArray<f32>> = hosts.iter().map(|h| ctx.upload(h).unwrap()).collect();
    let during = ctx.memory_stats().unwrap();
    let asked: usize = sizes.iter().map(|n| n * 4).sum();
    assert!(
        during.in_use >= before.in_use + asked,
        "in use {} < {} + {asked}",
        during.in_use,
        before.in_use
    );
    assert!(during.reserved >= during.in_use);
    assert_eq!(during.cached, during.reserved - during.in_use);
    assert!(during.peak_in_use >= during.in_use);
    for (a, h) in arrays.iter().zip(&hosts) {
        assert_same(h, &a.download().unwrap());
    }
    drop(arrays);
    let after = ctx.memory_stats().unwrap();
    assert_eq!(after.in_use, before.in_use, "every block came back");
    assert_eq!(after.reserved, during.reserved, "freed memory stays cached");
    // The same sizes again are served from the cache.
    let again: Vec<GpuArray<f32>> = hosts.iter().map(|h| ctx.upload(h).unwrap()).collect();
    let hits = ctx.memory_stats().unwrap().hits - after.hits;
    assert!(hits >= sizes.len() as u64 / 2, "only {hits} cache hits");
    for (a, h) in again.iter().zip(&hosts) {
        assert_same(h, &a.download().unwrap());
    }
    drop(again);
    ctx.sync().unwrap();
    // Read again here: the uploads above may have taken a new segment
    // where a cached block did not fit (only half need be hits).
    let cached = ctx.memory_stats().unwrap();
    let released = ctx.empty_cache().unwrap();
    let emptied = ctx.memory_stats().unwrap();
    assert_eq!(emptied.in_use, before.in_use);
    assert_eq!(released, cached.reserved - emptied.reserved);
    assert!(emptied.cached <= before.cached, "idle segments went back");
});

on_every_cuda_backend!(
    out_of_memory_empties_the_cache_and_reports_true_free_bytes,
    |ctx| {
        let total = ctx.memory_info().unwrap().total;
        if ctx.backend() == Backend::Torch {
            // torch's allocator has its own cache, which this crate can
            // neither fill on purpose nor empty: only the error itself,
            // and a context that goes on working.
            for attempt in 0..2 {
                match ctx.alloc::<u8>(total) {
                    Err(Error::OutOfMemory { requested, free }) => {
                        assert_eq!(requested, total, "attempt {attempt}");
                        assert!(free < total, "attempt {attempt}: {free} free of {total}");
                    }
                    other => panic!("the whole device twice over on torch: {other:?}"),
                }
            }
            let host = random_vec::<f32>(1 << 20);
            assert_same(&host, &ctx.upload(&host).unwrap().download().unwrap());
            return;
        }
        // Fill the cache with freed blocks, then ask for more than the device
        // has: the cache is emptied before the error, which reports what the
        // driver then says is free.
        drop(
            (0..8)
                .map(|_| ctx.zeros::<u8>(64 << 20).unwrap())
                .collect::<Vec<_>>(),
        );
        assert!(ctx.memory_stats().unwrap().cached >= 8 * (64 << 20));
        for attempt in 0..2 {
            match ctx.alloc::<u8>(total) {
                Err(Error::OutOfMemory { requested, free }) => {
                    assert_eq!(requested, total);
                    let now = ctx.memory_info().unwrap().free;
                    assert!(
                        free.abs_diff(now) < 256 << 20,
                        "attempt {attempt}: reported {free} free, the driver says {now}"
                    );
                }
                other => panic!("the whole device twice over: {other:?}"),
            }
        }
        let stats = ctx.memory_stats().unwrap();
        assert!(stats.oom_retries >= 2);
        // Emptied but for what shares a segment with a live block: the
        // context's fault word (one small block, made with the context)
        // keeps its 2 MiB segment.
        assert!(
            stats.reserved <= stats.in_use.max(1).next_multiple_of(2 << 20),
            "the failed allocation emptied the cache: {stats:?}"
        );
        // And the context goes on working.
        let host = random_vec::<f32>(1 << 20);
        assert_same(&host, &ctx.upload(&host).unwrap().download().unwrap());
    }
);

on_every_cuda_backend!(reuse_across_streams_keeps_every_array_intact, |ctx| {
    // Many arrays allocated, written and freed on several streams in a
    // random order: every one holds exactly what was written to it.
    let streams: Vec<_> = (0..4).map(|_| ctx.create_stream().unwrap()).collect();
    let mut rng = rand::rng();
    let mut live: Vec<(GpuArray<f32>, Vec<f32>)> = Vec::new();
    for _ in 0..300 {
        if live.is_empty() || rng.random_bool(0.6) {
            let n = rng.random_range(1..(1 << 18));
            let s = &streams[rng.random_range(0..streams.len())];
            let host = random_vec::<f32>(n);
            let mut a = ctx.alloc::<f32>(n).unwrap();
            s.upload(&host, &mut a).unwrap();
            ctx.ops_on(s).scale(2.0, &mut a).unwrap();
            let want: Vec<f32> = host.iter().map(|x| x * 2.0).collect();
            live.push((a, want));
        } else {
            let (a, want) = live.swap_remove(rng.random_range(0..live.len()));
            let s = &streams[rng.random_range(0..streams.len())];
            assert_same(&want, &s.download(&a).unwrap());
        }
    }
    for (a, want) in &live {
        assert_same(want, &a.download().unwrap());
    }
});
