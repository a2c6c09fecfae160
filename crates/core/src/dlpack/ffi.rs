//! The DLPack C ABI (1.x), as `dlpack.h` declares it.
//!
//! Field names follow the header so the declarations can be checked
//! against it line by line; `include/unigpu.h` declares the same structs
//! for C callers.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::ffi::c_void;

/// The DLPack version this crate produces: 1.0, the first versioned ABI;
/// nothing here needs a later minor version, and 1.0 is what every
/// consumer that asks for `max_version=(1, 0)` (numpy, torch) accepts.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
pub const DLPACK_MINOR_VERSION: u32 = 0;

/// `DLManagedTensorVersioned::flags`: the consumer must not write the data.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLManagedTensorVersioned::flags`: the producer copied the data.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;

/// `DLDeviceType` values this crate understands.
pub const kDLCPU: i32 = 1;
pub const kDLCUDA: i32 = 2;
pub const kDLCUDAHost: i32 = 3;
pub const kDLVulkan: i32 = 7;
pub const kDLCUDAManaged: i32 = 13;

/// `DLDataTypeCode` values.
pub const kDLInt: u8 = 0;
pub const kDLUInt: u8 = 1;
pub const kDLFloat: u8 = 2;
pub const kDLBfloat: u8 = 4;
pub const kDLBool: u8 = 6;

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    /// A `DLDeviceType` (an `int32` enum in C).
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    /// NULL means compact row-major.
    pub strides: *mut i64,
    pub byte_offset: u64,
}

/// The legacy (pre-1.0) managed tensor.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// The versioned managed tensor (DLPack ≥ 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}
