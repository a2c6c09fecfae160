//! The caching allocator's bookkeeping: segments carved into blocks, best
//! fit, splitting and merging. No CUDA here, so every rule is tested on any
//! machine; `alloc/mod.rs` supplies the memory and decides, through `P`,
//! when a free block may be handed to a stream.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

/// Sizes are multiples of this, so every block stays aligned for any
/// element type and for vectorised loads.
pub(crate) const ROUND: usize = 512;
/// Requests up to this size come from the small pool, whose segments are
/// [`SMALL_SEGMENT`] bytes, so small buffers never fragment big segments.
pub(crate) const SMALL_MAX: usize = 1 << 20;
pub(crate) const SMALL_SEGMENT: usize = 2 << 20;
/// Requests below this share a [`MID_SEGMENT`]-byte segment.
const MID_MAX: usize = 10 << 20;
const MID_SEGMENT: usize = 20 << 20;
/// Large segments are whole multiples of the driver's 2 MiB page.
const PAGE: usize = 2 << 20;
/// A free block is looked at this many times at most per allocation before
/// a new segment is taken instead, bounding an allocation's cost when many
/// blocks still wait on other streams.
const MAX_CANDIDATES: usize = 16;

/// Which pool a request (and the segment serving it) belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    Small,
    Large,
}

impl Pool {
    pub(crate) fn of(size: usize) -> Pool {
        if size <= SMALL_MAX {
            Pool::Small
        } else {
            Pool::Large
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The smallest remainder worth keeping as its own free block: a large
    /// block split into crumbs would only serve the small pool's sizes.
    fn min_split(self) -> usize {
        match self {
            Pool::Small => ROUND,
            Pool::Large => SMALL_MAX + 1,
        }
    }
}

/// `size` rounded up to the allocator's granularity, or `None` on overflow.
pub(crate) fn round(size: usize) -> Option<usize> {
    Some(size.max(1).checked_add(ROUND - 1)? / ROUND * ROUND)
}

/// How big a new segment for a request of `size` (already rounded) is.
pub(crate) fn segment_size(size: usize) -> Option<usize> {
    Some(match Pool::of(size) {
        Pool::Small => SMALL_SEGMENT,
        Pool::Large if size < MID_MAX => MID_SEGMENT,
        Pool::Large => size.checked_add(PAGE - 1)? / PAGE * PAGE,
    })
}

/// What a free block still waits for before another stream may have it;
/// merged when neighbouring free blocks merge.
pub(crate) trait Pending: Clone + Default {
    fn merge(&mut self, other: Self);
}

#[derive(Debug)]
struct Block<P> {
    size: usize,
    segment: u64,
    /// Its segment's pool, kept here so a free needs no segment lookup.
    pool: Pool,
    /// `None` while handed out.
    free: Option<P>,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    size: usize,
    pool: Pool,
}

/// Counters behind `memory_stats`; bytes unless named otherwise.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocatorStats {
    /// Held from the driver, in use or cached.
    pub reserved: usize,
    /// Handed out to live buffers (rounded sizes).
    pub in_use: usize,
    /// The most `in_use` has been since the allocator started.
    pub peak_in_use: usize,
    pub segments: usize,
    /// Allocations served from cached memory.
    pub hits: u64,
    /// Allocations that took a new segment from the driver.
    pub misses: u64,
    /// Times an allocation ran out of memory, emptied the cache and tried
    /// again.
    pub oom_retries: u64,
}

impl AllocatorStats {
    /// Reserved but not in use: what `empty_cache` could give back at most.
    pub fn cached(&self) -> usize {
        self.reserved - self.in_use
    }
}

/// Every segment and block of one device, by address.
#[derive(Debug)]
pub(crate) struct Blocks<P> {
    segments: BTreeMap<u64, Segment>,
    blocks: BTreeMap<u64, Block<P>>,
    /// Free blocks by (size, address), one set per pool: best fit is the
    /// first entry at or above the asked size.
    free: [BTreeSet<(usize, u64)>; 2],
    pub(crate) stats: AllocatorStats,
}

impl<P> Default for Blocks<P> {
    fn default() -> Self {
        Blocks {
            segments: BTreeMap::new(),
            blocks: BTreeMap::new(),
            free: [BTreeSet::new(), BTreeSet::new()],
            stats: AllocatorStats::default(),
        }
    }
}

impl<P: Pending> Blocks<P> {
    /// Hands out the smallest free block of `size` (rounded) bytes that
    /// `usable` accepts, split when the rest is worth keeping. `usable` may
    /// update what the block waits for (and returns whether it may be used
    /// now). Returns the address and what the block still waited for.
    pub(crate) fn take(
        &mut self,
        size: usize,
        mut usable: impl FnMut(&mut P) -> bool,
    ) -> Option<(u64, P)> {
        let pool = Pool::of(size);
        // On the stack: this is every allocation's path.
        let mut candidates = [(0usize, 0u64); MAX_CANDIDATES];
        let mut count = 0;
        for (slot, c) in candidates
            .iter_mut()
            .zip(self.free[pool.index()].range((size, 0)..))
        {
            *slot = *c;
            count += 1;
        }
        for &(found, addr) in &candidates[..count] {
            let block = self.blocks.get_mut(&addr)?;
            let pending = block.free.as_mut()?;
            if !usable(pending) {
                continue;
            }
            let pending = block.free.take()?;
            self.free[pool.index()].remove(&(found, addr));
            let split = found - size >= pool.min_split();
            let taken = if split { size } else { found };
            if split {
                block.size = size;
                let segment = block.segment;
                let rest = addr + size as u64;
                self.blocks.insert(
                    rest,
                    Block {
                        size: found - size,
                        segment,
                        pool,
                        free: Some(pending.clone()),
                    },
                );
                self.free[pool.index()].insert((found - size, rest));
            }
            self.note_in_use(taken as isize);
            self.stats.hits += 1;
            return Some((addr, pending));
        }
        None
    }

    /// Adds a new segment at `addr` and hands out its first `size` bytes.
    pub(crate) fn take_new_segment(&mut self, addr: u64, segment_size: usize, size: usize) {
        let pool = Pool::of(size);
        self.segments.insert(
            addr,
            Segment {
                size: segment_size,
                pool,
            },
        );
        self.stats.reserved += segment_size;
        self.stats.segments += 1;
        self.stats.misses += 1;
        let rest = segment_size - size;
        let first = if rest >= pool.min_split() {
            size
        } else {
            segment_size
        };
        self.blocks.insert(
            addr,
            Block {
                size: first,
                segment: addr,
                pool,
                free: None,
            },
        );
        if first < segment_size {
            let rest_addr = addr + first as u64;
            self.blocks.insert(
                rest_addr,
                Block {
                    size: segment_size - first,
                    segment: addr,
                    pool,
                    free: Some(P::default()),
                },
            );
            self.free[pool.index()].insert((segment_size - first, rest_addr));
        }
        self.note_in_use(first as isize);
    }

    /// The size of the block handed out at `addr`, if there is one.
    #[cfg(test)]
    pub(crate) fn in_use_size(&self, addr: u64) -> Option<usize> {
        let block = self.blocks.get(&addr)?;
        block.free.is_none().then_some(block.size)
    }

    /// Takes back the block at `addr`, which waits for `pending`, merging
    /// it with free neighbours of its segment. False when `addr` was not
    /// handed out (nothing changes then).
    pub(crate) fn give_back(&mut self, addr: u64, pending: P) -> bool {
        let Some(block) = self.blocks.get_mut(&addr) else {
            return false;
        };
        if block.free.is_some() {
            return false;
        }
        let (mut size, segment, pool) = (block.size, block.segment, block.pool);
        self.note_in_use(-(size as isize));
        let mut pending = pending;
        // The free block just after, in the same segment.
        let next_addr = addr + size as u64;
        if let Entry::Occupied(next) = self.blocks.entry(next_addr)
            && next.get().segment == segment
            && next.get().free.is_some()
        {
            let next = next.remove();
            self.free[pool.index()].remove(&(next.size, next_addr));
            size += next.size;
            pending.merge(next.free.expect("checked free above"));
        }
        // The free block just before, in the same segment: it grows to
        // cover this one.
        if let Some((&prev_addr, prev)) = self.blocks.range_mut(..addr).next_back()
            && prev.segment == segment
            && prev_addr + prev.size as u64 == addr
            && let Some(prev_pending) = prev.free.take()
        {
            self.free[pool.index()].remove(&(prev.size, prev_addr));
            pending.merge(prev_pending);
            prev.size += size;
            prev.free = Some(pending);
            self.free[pool.index()].insert((prev.size, prev_addr));
            self.blocks.remove(&addr);
            return true;
        }
        let block = self.blocks.get_mut(&addr).expect("looked up above");
        block.size = size;
        block.free = Some(pending);
        self.free[pool.index()].insert((size, addr));
        true
    }

    /// Removes every segment with nothing handed out and returns
    /// (address, size, what it waited for) of each, for the caller to free.
    pub(crate) fn take_idle_segments(&mut self) -> Vec<(u64, usize, P)> {
        let idle: Vec<(u64, Segment)> = self
            .segments
            .iter()
            .filter(|(addr, seg)| {
                self.blocks
                    .get(addr)
                    .is_some_and(|b| b.free.is_some() && b.size == seg.size)
            })
            .map(|(a, s)| (*a, *s))
            .collect();
        idle.into_iter()
            .map(|(addr, seg)| {
                self.segments.remove(&addr);
                let block = self.blocks.remove(&addr).expect("idle segment's block");
                self.free[seg.pool.index()].remove(&(seg.size, addr));
                self.stats.reserved -= seg.size;
                self.stats.segments -= 1;
                (addr, seg.size, block.free.unwrap_or_default())
            })
            .collect()
    }

    fn note_in_use(&mut self, delta: isize) {
        self.stats.in_use = self.stats.in_use.wrapping_add_signed(delta);
        self.stats.peak_in_use = self.stats.peak_in_use.max(self.stats.in_use);
    }

    /// Checks that blocks tile their segments exactly, free sets match the
    /// blocks, no two free neighbours are left unmerged, and the counters
    /// add up. For tests.
    #[cfg(test)]
    pub(crate) fn check_invariants(&self) {
        let mut in_use = 0;
        for (&seg_addr, seg) in &self.segments {
            let mut at = seg_addr;
            let mut prev_free = false;
            for (&addr, block) in self.blocks.range(seg_addr..seg_addr + seg.size as u64) {
                assert_eq!(addr, at, "blocks tile the segment");
                assert_eq!(block.segment, seg_addr);
                let free = block.free.is_some();
                assert!(!(free && prev_free), "free neighbours are merged");
                if free {
                    assert!(self.free[seg.pool.index()].contains(&(block.size, addr)));
                } else {
                    in_use += block.size;
                }
                prev_free = free;
                at += block.size as u64;
            }
            assert_eq!(at, seg_addr + seg.size as u64, "blocks cover the segment");
        }
        let free_count: usize = self.free.iter().map(|s| s.len()).sum();
        let free_blocks = self.blocks.values().filter(|b| b.free.is_some()).count();
        assert_eq!(free_count, free_blocks);
        assert_eq!(in_use, self.stats.in_use);
        let reserved: usize = self.segments.values().map(|s| s.size).sum();
        assert_eq!(reserved, self.stats.reserved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Which "streams" a free block waits on, as a bit set.
    #[derive(Debug, Clone, Default, PartialEq)]
    struct Streams(u32);

    impl Pending for Streams {
        fn merge(&mut self, other: Self) {
            self.0 |= other.0;
        }
    }

    /// A fake driver: segments at increasing, never reused addresses.
    fn alloc(blocks: &mut Blocks<Streams>, next: &mut u64, size: usize, stream: u32) -> u64 {
        let size = round(size).unwrap();
        if let Some((addr, _)) = blocks.take(size, |p| p.0 & !(1 << stream) == 0) {
            return addr;
        }
        let seg = segment_size(size).unwrap();
        let addr = *next;
        *next += seg as u64 + (1 << 30);
        blocks.take_new_segment(addr, seg, size);
        addr
    }

    #[test]
    fn rounding_and_segment_sizes() {
        assert_eq!(round(0), Some(512));
        assert_eq!(round(1), Some(512));
        assert_eq!(round(512), Some(512));
        assert_eq!(round(513), Some(1024));
        assert_eq!(round(usize::MAX), None);
        assert_eq!(segment_size(512), Some(SMALL_SEGMENT));
        assert_eq!(segment_size(SMALL_MAX), Some(SMALL_SEGMENT));
        assert_eq!(segment_size(SMALL_MAX + 512), Some(MID_SEGMENT));
        assert_eq!(segment_size(64 << 20), Some(64 << 20));
        assert_eq!(segment_size((64 << 20) + 512), Some(66 << 20));
    }

    #[test]
    fn a_freed_block_is_reused_on_its_stream_and_split() {
        let mut b = Blocks::<Streams>::default();
        let mut next = 1 << 40;
        let a = alloc(&mut b, &mut next, 1 << 20, 0);
        assert_eq!(b.stats.misses, 1);
        assert!(b.give_back(a, Streams(1)));
        let again = alloc(&mut b, &mut next, 4096, 0);
        assert_eq!(again, a, "best fit reuses the freed block");
        assert_eq!(b.stats.hits, 1);
        let next_block = alloc(&mut b, &mut next, 4096, 0);
        assert_eq!(next_block, a + 4096, "the rest was split off");
        b.check_invariants();
    }

    #[test]
    fn a_block_waiting_on_another_stream_is_not_handed_out() {
        let mut b = Blocks::<Streams>::default();
        let mut next = 1 << 40;
        let a = alloc(&mut b, &mut next, 1 << 20, 0);
        b.give_back(a, Streams(1 << 0));
        let other = alloc(&mut b, &mut next, 1 << 20, 1);
        assert_ne!(other, a);
        b.check_invariants();
    }

    #[test]
    fn giving_back_twice_or_a_stranger_changes_nothing() {
        let mut b = Blocks::<Streams>::default();
        let mut next = 1 << 40;
        let a = alloc(&mut b, &mut next, 100, 0);
        assert!(b.give_back(a, Streams(0)));
        assert!(!b.give_back(a, Streams(0)));
        assert!(!b.give_back(12345, Streams(0)));
        b.check_invariants();
    }

    #[test]
    fn idle_segments_are_released_whole() {
        let mut b = Blocks::<Streams>::default();
        let mut next = 1 << 40;
        let a = alloc(&mut b, &mut next, 100, 0);
        let c = alloc(&mut b, &mut next, 100 << 20, 0);
        b.give_back(a, Streams(1));
        let idle = b.take_idle_segments();
        assert_eq!(idle.len(), 1);
        assert_eq!(idle[0].1, SMALL_SEGMENT);
        assert_eq!(b.stats.reserved, 100 << 20);
        b.give_back(c, Streams(1));
        assert_eq!(b.take_idle_segments().len(), 1);
        assert_eq!(b.stats.reserved, 0);
        b.check_invariants();
    }

    /// Random allocations and frees on four streams: live blocks never
    /// overlap, a block is never handed to a stream it waits on, and the
    /// bookkeeping stays exact.
    #[test]
    fn random_alloc_free_keeps_blocks_disjoint() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(12);
        let mut b = Blocks::<Streams>::default();
        let mut next = 1 << 40;
        let mut live: Vec<(u64, usize, u32)> = Vec::new();
        for step in 0..20_000 {
            if live.is_empty() || rng.random_bool(0.55) {
                let size = if rng.random_bool(0.8) {
                    rng.random_range(1..=SMALL_MAX)
                } else {
                    rng.random_range(SMALL_MAX..64 << 20)
                };
                let stream = rng.random_range(0..4);
                let addr = alloc(&mut b, &mut next, size, stream);
                let rounded = b.in_use_size(addr).expect("handed out");
                assert!(rounded >= round(size).unwrap());
                for &(other, other_size, _) in &live {
                    let disjoint =
                        addr + rounded as u64 <= other || other + other_size as u64 <= addr;
                    assert!(disjoint, "step {step}: {addr:#x} overlaps {other:#x}");
                }
                live.push((addr, rounded, stream));
            } else {
                let (addr, _, stream) = live.swap_remove(rng.random_range(0..live.len()));
                assert!(b.give_back(addr, Streams(1 << stream)));
            }
            if step % 1000 == 0 {
                b.check_invariants();
            }
        }
        for (addr, _, stream) in live.drain(..) {
            b.give_back(addr, Streams(1 << stream));
        }
        b.check_invariants();
        assert_eq!(b.stats.in_use, 0);
        b.take_idle_segments();
        assert_eq!(b.stats.reserved, 0);
        assert_eq!(b.stats.segments, 0);
    }
}
