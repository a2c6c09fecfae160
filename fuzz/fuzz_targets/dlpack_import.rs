//! DLPack import of arbitrary tensor descriptors on the CPU backend:
//! `DlpackTensor::from_raw_versioned` / `from_raw_legacy` and then
//! `Context::from_dlpack` (crates/unigpu/src/dlpack, the CPU backend's
//! import and the descriptor checks in unigpu-core).
//!
//! Each input describes a `DLManagedTensorVersioned` (or a legacy
//! `DLManagedTensor`): version, flags, device, ndim, shape, strides, dtype
//! code/bits/lanes, byte_offset, and a data pointer that is NULL or points
//! into a real host buffer of some size. The shape and strides arrays hold
//! exactly `ndim` entries (the DLPack contract), or fewer when `ndim` is
//! out of range (which must be rejected before they are read).
//!
//! Properties: never a panic and never an out-of-bounds read (ASan);
//! the import succeeds exactly when the descriptor is one the CPU backend
//! takes (a supported dtype with one lane, host memory, no negative
//! stride, aligned, writable, supported version, no overflow) — computed
//! here independently — and then the array has the described length,
//! reads its elements from exactly the places the shape and strides name
//! (in row-major order), writes them there and nowhere else (an array
//! whose strides may name a place twice refuses the write); the
//! producer's deleter runs exactly once (or never, when it is NULL).
//!
//! A descriptor that the checks would accept but whose extent lies outside
//! the buffer breaks the producer's side of the contract (the consumer
//! cannot see allocation sizes; such a tensor is undefined behaviour in C
//! too), so it is not imported.

#![no_main]

use std::ffi::c_void;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use unigpu::{Backend, Context, DType, DlpackTensor};
use unigpu_core::dlpack::ffi::{
    self, DLDataType, DLDevice, DLManagedTensor, DLManagedTensorVersioned, DLPackVersion, DLTensor,
};

fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::new(Backend::Cpu, 0).expect("the CPU backend"))
}

/// The DLPack dtypes of unigpu's element types.
const SUPPORTED: [(u8, u8); 9] = [
    (ffi::kDLFloat, 32),
    (ffi::kDLFloat, 64),
    (ffi::kDLFloat, 16),
    (ffi::kDLBfloat, 16),
    (ffi::kDLInt, 32),
    (ffi::kDLUInt, 32),
    (ffi::kDLInt, 64),
    (ffi::kDLUInt, 64),
    (ffi::kDLUInt, 8),
];

/// One descriptor, as decoded from the fuzzer's bytes.
#[derive(Debug)]
struct Desc {
    versioned: bool,
    version: DLPackVersion,
    flags: u64,
    device: DLDevice,
    ndim: i32,
    /// `None`: a NULL shape pointer.
    shape: Option<Vec<i64>>,
    /// `None`: a NULL strides pointer (compact row-major).
    strides: Option<Vec<i64>>,
    dtype: DLDataType,
    /// `None`: a NULL data pointer; else the buffer's size in bytes and
    /// where in it `data` points.
    buffer: Option<(usize, usize)>,
    byte_offset: u64,
    has_deleter: bool,
}

fn small_or_any_i64(u: &mut Unstructured<'_>, small: i64) -> Result<i64> {
    Ok(match u.int_in_range(0..=7u8)? {
        0 => u.arbitrary()?,
        1 => *u.choose(&[-1, i64::MAX, i64::MIN, 1 << 31, 1 << 62])?,
        _ => u.int_in_range(0..=small)?,
    })
}

fn desc(u: &mut Unstructured<'_>) -> Result<Desc> {
    let versioned = u.arbitrary()?;
    let version = DLPackVersion {
        major: if u.ratio(7, 8)? { 1 } else { u.arbitrary()? },
        minor: if u.ratio(3, 4)? { 0 } else { u.arbitrary()? },
    };
    let flags = match u.int_in_range(0..=3u8)? {
        0 => u.arbitrary()?,
        1 => ffi::DLPACK_FLAG_BITMASK_READ_ONLY,
        _ => 0,
    };
    let device = DLDevice {
        device_type: if u.ratio(3, 4)? {
            *u.choose(&[ffi::kDLCPU, ffi::kDLCUDAHost, ffi::kDLCUDAManaged])?
        } else {
            u.arbitrary()?
        },
        device_id: if u.ratio(3, 4)? { 0 } else { u.arbitrary()? },
    };
    let ndim = match u.int_in_range(0..=7u8)? {
        0 => u.arbitrary()?,
        1 => *u.choose(&[-1, 64, 65, i32::MAX, i32::MIN])?,
        _ => u.int_in_range(0..=4)?,
    };
    // Arrays of exactly `ndim` entries when that is in range; else a few.
    let entries = if (0..=64).contains(&ndim) {
        ndim as usize
    } else {
        u.int_in_range(0..=2)?
    };
    let shape = if u.ratio(15, 16)? {
        let mut v = Vec::with_capacity(entries);
        for _ in 0..entries {
            v.push(small_or_any_i64(u, 6)?);
        }
        Some(v)
    } else {
        None
    };
    let strides = match (u.int_in_range(0..=3u8)?, &shape) {
        (0, _) | (_, None) => None,
        (1, Some(_)) => {
            let mut v = Vec::with_capacity(entries);
            for _ in 0..entries {
                v.push(small_or_any_i64(u, 40)?);
            }
            Some(v)
        }
        (_, Some(shape)) => {
            // Row-major strides, maybe with one changed.
            let mut v = vec![0i64; shape.len()];
            let mut step = 1i64;
            for (s, &d) in v.iter_mut().zip(shape).rev() {
                *s = step;
                step = step.saturating_mul(d);
            }
            if !v.is_empty() && u.ratio(1, 4)? {
                let i = u.choose_index(v.len())?;
                v[i] = small_or_any_i64(u, 40)?;
            }
            Some(v)
        }
    };
    let dtype = if u.ratio(7, 8)? {
        let (code, bits) = *u.choose(&SUPPORTED)?;
        DLDataType {
            code,
            bits,
            lanes: if u.ratio(15, 16)? { 1 } else { u.arbitrary()? },
        }
    } else {
        DLDataType {
            code: u.arbitrary()?,
            bits: u.arbitrary()?,
            lanes: u.arbitrary()?,
        }
    };
    let buffer = if u.ratio(15, 16)? {
        let size = u.int_in_range(0..=512usize)?;
        Some((size, u.int_in_range(0..=size.min(24))?))
    } else {
        None
    };
    let byte_offset = match u.int_in_range(0..=7u8)? {
        0 => u.arbitrary()?,
        1 => *u.choose(&[u64::MAX, u64::MAX - 7, 1 << 63])?,
        2 | 3 => u.int_in_range(0..=64)?,
        _ => 0,
    };
    Ok(Desc {
        versioned,
        version,
        flags,
        device,
        ndim,
        shape,
        strides,
        dtype,
        buffer,
        byte_offset,
        has_deleter: u.ratio(7, 8)?,
    })
}

/// What the import must do with a descriptor.
#[derive(Debug, PartialEq)]
enum Expect {
    Reject(&'static str),
    /// Accept `len` elements of `dtype`, `size` bytes starting at address
    /// `start`.
    Accept {
        dtype: DType,
        len: usize,
        start: u64,
        size: usize,
        /// Each element's byte offset from `start`, in row-major order.
        places: Vec<usize>,
        /// Whether two elements may share a place (writes are refused).
        overlap: bool,
    },
}

/// The rules, from the DLPack contract and the documented limits of the
/// CPU backend's import, written independently of the importer.
fn expect(d: &Desc, data: u64) -> Expect {
    use Expect::Reject;
    if d.versioned && d.version.major != ffi::DLPACK_MAJOR_VERSION {
        return Reject("version");
    }
    if d.dtype.lanes != 1 {
        return Reject("lanes");
    }
    if !(0..=64).contains(&d.ndim) {
        return Reject("ndim");
    }
    let shape: &[i64] = match (&d.shape, d.ndim) {
        (_, 0) => &[],
        (Some(s), _) => s,
        (None, _) => return Reject("NULL shape"),
    };
    let mut len = 1usize;
    for &e in shape {
        let Ok(e) = usize::try_from(e) else {
            return Reject("negative extent");
        };
        let Some(l) = len.checked_mul(e) else {
            return Reject("count overflow");
        };
        len = l;
    }
    // The strides in elements: row-major when absent (or 0-d).
    let strides: Vec<i64> = match (&d.strides, shape.len()) {
        (Some(s), n) if n > 0 => s.clone(),
        _ => {
            let mut st = vec![0i64; shape.len()];
            let mut step = 1i64;
            for (i, &e) in shape.iter().enumerate().rev() {
                st[i] = step;
                step = step.saturating_mul(e.max(1));
            }
            st
        }
    };
    if strides.iter().any(|&s| s < 0) {
        return Reject("negative stride");
    }
    // The farthest element, in elements from the first.
    let mut reach: i128 = 0;
    for (&e, &s) in shape.iter().zip(&strides) {
        reach = reach.saturating_add((e.max(1) as i128 - 1).saturating_mul(s as i128));
    }
    // Given strides are checked for the farthest element (an empty or
    // row-major tensor has no such check: its memory is its elements).
    if d.strides.is_some() && !shape.is_empty() && len > 0 && reach >= isize::MAX as i128 {
        return Reject("extent overflow");
    }
    // Row-major and dense (extent-1 axes may have any stride): the memory
    // is exactly the elements; else it spans to the farthest one.
    let mut step = 1i64;
    let mut dense = true;
    for (&e, &s) in shape.iter().zip(&strides).rev() {
        if e != 1 && s != step {
            dense = false;
        }
        step = step.saturating_mul(e);
    }
    let span = if dense || len == 0 {
        len
    } else {
        reach as usize + 1
    };
    let elem = usize::from(d.dtype.bits).div_ceil(8).max(1);
    // The elements' bytes too (more than the memory's with a zero stride).
    if len
        .checked_mul(elem)
        .filter(|&b| b <= isize::MAX as usize)
        .is_none()
    {
        return Reject("byte size overflow");
    }
    let Some(size) = span.checked_mul(elem).filter(|&b| b <= isize::MAX as usize) else {
        return Reject("byte size overflow");
    };
    // Each element's place, row-major (only for what a buffer can hold;
    // a zero stride can repeat a few bytes into very many elements).
    let mut places = Vec::new();
    if size <= 1 << 20 && len <= 1 << 16 {
        for k in 0..len {
            let (mut rest, mut at) = (k, 0usize);
            for (&e, &s) in shape.iter().zip(&strides).rev() {
                let e = e as usize;
                at += (rest % e) * s as usize;
                rest /= e;
            }
            places.push(at * elem);
        }
    }
    let mut sorted = places.clone();
    sorted.sort_unstable();
    let repeats = sorted.windows(2).any(|w| w[0] == w[1]);
    // The importer's own test is sufficient, not exact: strides sorted by
    // size must each step past what the smaller ones reach.
    let mut axes: Vec<(i64, i64)> = shape
        .iter()
        .zip(&strides)
        .filter(|(e, _)| **e > 1)
        .map(|(&e, &s)| (s, e))
        .collect();
    axes.sort_unstable();
    let mut covered: i128 = 0;
    let mut may_overlap = false;
    for (s, e) in axes {
        if (s as i128) <= covered {
            may_overlap = true;
        }
        covered = covered.saturating_add((s as i128).saturating_mul(e as i128 - 1));
    }
    // An empty array writes nothing, so it refuses nothing.
    let overlap = len > 0 && !dense && (repeats || may_overlap);
    let Some(start) = data.checked_add(d.byte_offset) else {
        return Reject("offset overflow");
    };
    if len > 0 && start == 0 {
        return Reject("NULL data");
    }
    if start.checked_add(size as u64).is_none() {
        return Reject("extent wraps");
    }
    if len > 0 && start % elem as u64 != 0 {
        return Reject("misaligned");
    }
    let dtype = match (d.dtype.code, d.dtype.bits) {
        (ffi::kDLFloat, 32) => DType::F32,
        (ffi::kDLFloat, 64) => DType::F64,
        (ffi::kDLFloat, 16) => DType::F16,
        (ffi::kDLBfloat, 16) => DType::BF16,
        (ffi::kDLInt, 32) => DType::I32,
        (ffi::kDLUInt, 32) => DType::U32,
        (ffi::kDLInt, 64) => DType::I64,
        (ffi::kDLUInt, 64) => DType::U64,
        (ffi::kDLUInt, 8) => DType::U8,
        _ => return Reject("dtype"),
    };
    if !matches!(
        d.device.device_type,
        ffi::kDLCPU | ffi::kDLCUDAHost | ffi::kDLCUDAManaged
    ) {
        return Reject("not host memory");
    }
    if d.versioned && d.flags & ffi::DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
        return Reject("read-only");
    }
    Expect::Accept {
        dtype,
        len,
        start,
        size,
        places,
        overlap,
    }
}

/// How many times each tensor's deleter ran (`manager_ctx` points here).
type Calls = AtomicUsize;

unsafe extern "C" fn delete_versioned(t: *mut DLManagedTensorVersioned) {
    // SAFETY: the importer calls the deleter with the tensor it was given,
    // whose `manager_ctx` is the live counter of the running input.
    unsafe { (*(*t).manager_ctx.cast::<Calls>()).fetch_add(1, Ordering::SeqCst) };
}

unsafe extern "C" fn delete_legacy(t: *mut DLManagedTensor) {
    // SAFETY: as in `delete_versioned`.
    unsafe { (*(*t).manager_ctx.cast::<Calls>()).fetch_add(1, Ordering::SeqCst) };
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(d) = desc(&mut u) else { return };
    // The backing buffer, exactly its size (so that ASan sees any read
    // past it), filled with a pattern. Its alignment is whatever the
    // allocator gives: the rules use the real addresses.
    let buffer_bytes = d.buffer.map_or(0, |(size, _)| size);
    let mut buffer: Vec<u8> = (0..buffer_bytes)
        .map(|i| (i as u8).wrapping_mul(7) ^ 0xc3)
        .collect();
    let base = buffer.as_mut_ptr();
    let data_ptr: *mut c_void = match d.buffer {
        // SAFETY: `at` is at most the buffer's size (one past its end at most).
        Some((_, at)) => unsafe { base.add(at) }.cast(),
        None => std::ptr::null_mut(),
    };
    let want = expect(&d, data_ptr as u64);
    if let Expect::Accept { start, size, .. } = &want {
        let (start, size) = (*start, *size);
        let lo = base as u64;
        let inside = size == 0 || (start >= lo && start + size as u64 <= lo + buffer_bytes as u64);
        if !inside {
            // The producer's contract is broken (see the module docs).
            return;
        }
    }
    let mut shape = d.shape.clone();
    let mut strides = d.strides.clone();
    let dl_tensor = DLTensor {
        data: data_ptr,
        device: d.device,
        ndim: d.ndim,
        dtype: d.dtype,
        shape: shape
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        strides: strides
            .as_mut()
            .map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
        byte_offset: d.byte_offset,
    };
    let calls = Calls::new(0);
    let manager_ctx = (&raw const calls).cast_mut().cast::<c_void>();
    let mut versioned = DLManagedTensorVersioned {
        version: d.version,
        manager_ctx,
        deleter: d.has_deleter.then_some(delete_versioned as _),
        flags: d.flags,
        dl_tensor,
    };
    let mut legacy = DLManagedTensor {
        dl_tensor,
        manager_ctx,
        deleter: d.has_deleter.then_some(delete_legacy as _),
    };
    let taken = if d.versioned {
        // SAFETY: a live descriptor whose shape, strides and data stay
        // valid (as described, see above) until the end of this input,
        // after the deleter has run; owned by nobody else.
        unsafe { DlpackTensor::from_raw_versioned(&raw mut versioned) }
    } else {
        // SAFETY: as above.
        unsafe { DlpackTensor::from_raw_legacy(&raw mut legacy) }
    };
    let imported = taken
        .map_err(unigpu::Error::from)
        .and_then(|t| ctx().from_dlpack(t));
    match (&want, imported) {
        (Expect::Reject(why), Ok(a)) => {
            panic!("imported a descriptor that breaks a rule ({why}): {d:?}; got {a:?}")
        }
        (Expect::Accept { .. }, Err(e)) => panic!("refused a valid descriptor: {e}; {d:?}"),
        (Expect::Reject(_), Err(e)) => {
            assert!(matches!(e, unigpu::Error::Dlpack { .. }), "{e:?}");
        }
        (
            Expect::Accept {
                dtype,
                len,
                start,
                size,
                places,
                overlap,
            },
            Ok(mut a),
        ) => {
            let elem = dtype.size_bytes();
            assert_eq!(
                (a.dtype(), a.len(), a.size_bytes()),
                (*dtype, *len, len * elem),
                "{d:?}"
            );
            if places.len() != *len {
                // Too many elements to read back here (a zero stride over
                // a huge extent): the import itself is what was checked.
                drop(a);
                ctx().sync().expect("sync");
                return finish(&calls, &d);
            }
            // An empty tensor may point anywhere; it is never read.
            let offset = start.wrapping_sub(base as u64) as usize;
            let memory = || -> Vec<u8> {
                if *size == 0 {
                    return Vec::new();
                }
                // SAFETY: `offset + size` lies inside the buffer (checked
                // above), which lives until the end of this input; read
                // while no array call is running.
                unsafe { std::slice::from_raw_parts(base.add(offset), *size) }.to_vec()
            };
            let gather = |m: &[u8]| -> Vec<u8> {
                places
                    .iter()
                    .flat_map(|&p| m[p..p + elem].to_vec())
                    .collect()
            };
            let before = memory();
            let mut host = vec![0u8; len * elem];
            a.download_bytes(&mut host).expect("download");
            assert_eq!(host, gather(&before), "read other bytes than described");
            let fresh: Vec<u8> = (0..len * elem)
                .map(|i| (i as u8).wrapping_mul(31) ^ 0x5a)
                .collect();
            let wrote = a.upload_bytes(&fresh);
            ctx().sync().expect("sync");
            drop(a);
            ctx().sync().expect("sync");
            let after = memory();
            if *overlap {
                assert!(
                    matches!(wrote, Err(unigpu::Error::Shape { .. })),
                    "a write to places named twice: {wrote:?}; {d:?}"
                );
                assert_eq!(after, before, "a refused write changed the memory");
            } else {
                wrote.expect("upload");
                assert_eq!(gather(&after), fresh, "wrote other bytes than described");
                // Nothing else in the span changed.
                let mut named = vec![false; *size];
                for &p in places.iter() {
                    named[p..p + elem].iter_mut().for_each(|b| *b = true);
                }
                for i in 0..*size {
                    if !named[i] {
                        assert_eq!(
                            after[i], before[i],
                            "wrote byte {i}, which no element names"
                        );
                    }
                }
            }
        }
    }
    ctx().sync().expect("sync");
    finish(&calls, &d);
});

/// The deleter ran exactly once (never without one).
fn finish(calls: &Calls, d: &Desc) {
    let n = calls.load(Ordering::SeqCst);
    assert_eq!(
        n,
        usize::from(d.has_deleter),
        "the deleter ran {n} times: {d:?}"
    );
}
