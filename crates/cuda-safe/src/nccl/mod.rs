//! NCCL over this crate's devices, streams and buffers.
//!
//! - `unigpu_cuda_sys::nccl` loads libnccl and never panics; without it
//!   every entry point here returns [`SafeError::Unsupported`] with the
//!   reason.
//! - `comm.rs`: [`NcclComm`], the communicator of one process's ranks
//!   (one device each), on which every wait has a deadline: a rank that
//!   never arrives, or dies, is a [`SafeError::Timeout`] and an aborted
//!   communicator, not a hang. Init, send/recv and finalize are
//!   nonblocking; collectives go to blocking handles split off at init
//!   when NCCL connects at init (a quarter of the host time). Its `Drop`
//!   finalizes and destroys, or aborts, and never panics (cudarc's `Comm`
//!   panics in `Drop` after an abort, so it is not used).
//! - `watchdog.rs`: the thread that aborts a communicator whose
//!   collectives passed their deadline or that NCCL reports failed, so a
//!   stream sync after a dead peer's collective ends in an error.
//! - `ops.rs`: the collectives and send/recv, enqueued on each rank's
//!   stream after the buffers' pending uses (as a kernel launch is), and
//!   grouped (`ncclGroupStart`/`End`) so that one thread can drive every
//!   rank of its process.
//! - `backoff.rs`: how those waits pace their polls (yield first, then
//!   sleep longer and longer), so a short wait costs the GPU no idle time.

mod backoff;
mod comm;
mod ops;
mod parts;
mod watchdog;

pub use comm::{NcclComm, NcclId};
pub use ops::ReduceOp;
pub use parts::{CollectivePart, ForeignMemory, ForeignP2p, ForeignPart, P2p, Part, PointToPoint};

use std::ffi::c_int;

use unigpu_cuda_sys::nccl::{self as sys, Api, Status, ncclComm_t, ncclDataType_t};

use crate::Element;
use crate::dlpack::{dtype_of, ffi};
use crate::error::{Result, SafeError};

/// The NCCL functions, or `Unsupported` saying why there are none.
pub(crate) fn api() -> Result<&'static Api> {
    sys::nccl().api().map_err(|reason| SafeError::Unsupported {
        what: format!("collectives need NCCL, which cannot be used here: {reason}"),
    })
}

/// Which NCCL is loaded, e.g. `NCCL 2.28.9 (libnccl.so.2)`, or why none.
pub fn library() -> Result<String> {
    api()?;
    let lib = sys::nccl();
    Ok(format!(
        "NCCL {} ({})",
        lib.version_string().unwrap_or_else(|| "?".into()),
        lib.status.loaded_from.as_deref().unwrap_or("?")
    ))
}

/// `status` as a result: success and "in progress" (a nonblocking call
/// going on in the background) are `Ok`.
///
/// # Safety
/// `comm` is null or a live communicator (its last error is read).
pub(crate) unsafe fn check(
    api: &Api,
    call: &'static str,
    status: Status,
    comm: ncclComm_t,
) -> Result<Status> {
    if status == sys::SUCCESS || status == sys::IN_PROGRESS {
        return Ok(status);
    }
    // SAFETY: per this function's contract.
    let message = unsafe { api.last_error(comm) };
    Err(SafeError::Nccl {
        call,
        code: status,
        name: api.error_string(status),
        message,
    })
}

/// NCCL's number for `T`: every element type a buffer may hold has one.
pub(crate) fn data_type<T: Element>() -> c_int {
    use ncclDataType_t as D;
    let dt = dtype_of::<T>();
    let t = match (dt.code, dt.bits) {
        (ffi::kDLFloat, 16) => D::ncclFloat16,
        (ffi::kDLFloat, 32) => D::ncclFloat32,
        (ffi::kDLFloat, 64) => D::ncclFloat64,
        (ffi::kDLBfloat, _) => D::ncclBfloat16,
        (ffi::kDLInt, 8) => D::ncclInt8,
        (ffi::kDLInt, 32) => D::ncclInt32,
        (ffi::kDLInt, 64) => D::ncclInt64,
        (ffi::kDLUInt, 32) => D::ncclUint32,
        (ffi::kDLUInt, 64) => D::ncclUint64,
        // u8, the one element type left.
        _ => D::ncclUint8,
    };
    t as c_int
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn every_element_type_has_its_nccl_type() {
        use ncclDataType_t as D;
        assert_eq!(data_type::<f32>(), D::ncclFloat32 as c_int);
        assert_eq!(data_type::<f64>(), D::ncclFloat64 as c_int);
        assert_eq!(data_type::<f16>(), D::ncclFloat16 as c_int);
        assert_eq!(data_type::<bf16>(), D::ncclBfloat16 as c_int);
        assert_eq!(data_type::<i32>(), D::ncclInt32 as c_int);
        assert_eq!(data_type::<u32>(), D::ncclUint32 as c_int);
        assert_eq!(data_type::<i64>(), D::ncclInt64 as c_int);
        assert_eq!(data_type::<u64>(), D::ncclUint64 as c_int);
        assert_eq!(data_type::<u8>(), D::ncclUint8 as c_int);
    }
}
