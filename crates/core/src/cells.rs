//! A written host slice seen as relaxed atomic cells of its element's
//! width, so that the CPU backend can run a generated kernel's workgroups
//! in parallel over one output array without any two of them holding a
//! `&mut` to it (the facade is `#![forbid(unsafe_code)]`; this cast is the
//! one unsafe step, std's `from_mut_slice` being unstable).

use std::sync::atomic::{AtomicU8, AtomicU16, AtomicU32, AtomicU64};

/// `s` as `AtomicU8` cells (u8 arrays): `None` unless `T` is 1 byte
/// (every pointer is aligned for `AtomicU8`).
pub fn as_atomic_u8<T: bytemuck::Pod>(s: &mut [T]) -> Option<&[AtomicU8]> {
    if s.is_empty() {
        return Some(&[]);
    }
    let fits = std::mem::size_of::<T>() == 1;
    // SAFETY: as in `as_atomic_u32`, for 1-byte elements and AtomicU8
    // (alignment 1).
    fits.then(|| unsafe { std::slice::from_raw_parts(s.as_mut_ptr().cast::<AtomicU8>(), s.len()) })
}

/// `s` as `AtomicU16` cells (f16/bf16 arrays): `None` unless `T` is 2
/// bytes and `s` is aligned for `AtomicU16`.
pub fn as_atomic_u16<T: bytemuck::Pod>(s: &mut [T]) -> Option<&[AtomicU16]> {
    if s.is_empty() {
        return Some(&[]);
    }
    let fits = std::mem::size_of::<T>() == 2 && s.as_ptr().cast::<AtomicU16>().is_aligned();
    // SAFETY: as in `as_atomic_u32`, for 2-byte elements and AtomicU16.
    fits.then(|| unsafe { std::slice::from_raw_parts(s.as_mut_ptr().cast::<AtomicU16>(), s.len()) })
}

/// `s` as `AtomicU32` cells: `None` unless `T` is 4 bytes and `s` is
/// aligned for `AtomicU32`.
pub fn as_atomic_u32<T: bytemuck::Pod>(s: &mut [T]) -> Option<&[AtomicU32]> {
    if s.is_empty() {
        return Some(&[]);
    }
    let fits = std::mem::size_of::<T>() == 4 && s.as_ptr().cast::<AtomicU32>().is_aligned();
    // SAFETY: T is plain data of AtomicU32's size (checked above) and the
    // pointer is aligned for AtomicU32, so each element is one valid
    // AtomicU32 (which has u32's layout); the `&mut` borrow is exclusive
    // for the returned lifetime, so no non-atomic access can overlap the
    // atomic ones, exactly as `AtomicU32::from_mut_slice` allows.
    fits.then(|| unsafe { std::slice::from_raw_parts(s.as_mut_ptr().cast::<AtomicU32>(), s.len()) })
}

/// `s` as `AtomicU64` cells: `None` unless `T` is 8 bytes and `s` is
/// aligned for `AtomicU64`.
pub fn as_atomic_u64<T: bytemuck::Pod>(s: &mut [T]) -> Option<&[AtomicU64]> {
    if s.is_empty() {
        return Some(&[]);
    }
    let fits = std::mem::size_of::<T>() == 8 && s.as_ptr().cast::<AtomicU64>().is_aligned();
    // SAFETY: as in `as_atomic_u32`, for 8-byte elements and AtomicU64.
    fits.then(|| unsafe { std::slice::from_raw_parts(s.as_mut_ptr().cast::<AtomicU64>(), s.len()) })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn cells_see_and_write_the_slice() {
        let mut v = vec![1.5f32, -2.0, 3.25];
        let cells = super::as_atomic_u32(&mut v).unwrap();
        assert_eq!(f32::from_bits(cells[1].load(Relaxed)), -2.0);
        cells[2].store(7.0f32.to_bits(), Relaxed);
        assert_eq!(v, [1.5, -2.0, 7.0]);
        let mut w = vec![1u64, 2];
        super::as_atomic_u64(&mut w).unwrap()[0].store(9, Relaxed);
        assert_eq!(w, [9, 2]);
        assert!(super::as_atomic_u32(&mut [1u64]).is_none());
        assert!(super::as_atomic_u64(&mut [1u8; 8]).is_none());
        let mut h = vec![1u16, 2, 3];
        super::as_atomic_u16(&mut h).unwrap()[2].store(9, Relaxed);
        assert_eq!(h, [1, 2, 9]);
        assert!(super::as_atomic_u16(&mut [1u32]).is_none());
    }
}
