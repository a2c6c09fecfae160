//! Dtype-erased views of a CPU launch's arguments, for CPU implementations
//! that hand them on as plain bytes (the C API's kernels written in C).
//! Here, beside `args.rs`, so that only the CPU backend builds and reads its
//! own `CpuArgs`; the public types re-export them (`kernel/mod.rs`).
//!
//! [`CpuArgs::kind`] says what argument `i` is; [`CpuArgs::bytes`] and
//! [`CpuArgs::bytes_mut`] lock an array argument like [`CpuArgs::input`] and
//! [`CpuArgs::output`] do and show its elements as native-endian bytes. The
//! locks are held until the views are dropped, so a caller may keep views of
//! every array at once while it runs.

use unigpu_core::Scalar;

use super::args::{CpuArgs, CpuValue};
use crate::element::DType;
use crate::error::{Error, Result};

/// What one argument of a CPU launch is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CpuArgKind {
    /// A plain value.
    Scalar(Scalar),
    /// An array; `writable` when it was passed as `&mut` (an output).
    Array { dtype: DType, writable: bool },
}

/// Read access to an array argument's elements as bytes (a read lock).
pub struct CpuBytes<'a>(Box<dyn View + 'a>);

/// Write access to an array argument's elements as bytes (a write lock).
pub struct CpuBytesMut<'a>(Box<dyn ViewMut + 'a>);

trait View {
    fn bytes(&self) -> &[u8];
}

trait ViewMut: View {
    fn bytes_mut(&mut self) -> &mut [u8];
}

/// A typed lock guard with the functions that show it as bytes.
struct Guard<G> {
    guard: G,
    view: fn(&G) -> &[u8],
    view_mut: Option<fn(&mut G) -> &mut [u8]>,
}

impl<G> View for Guard<G> {
    fn bytes(&self) -> &[u8] {
        (self.view)(&self.guard)
    }
}

impl<G> ViewMut for Guard<G> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        match self.view_mut {
            Some(f) => f(&mut self.guard),
            // Only `bytes_mut` builds a `ViewMut`, always with `view_mut`.
            None => &mut [],
        }
    }
}

impl std::ops::Deref for CpuBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl std::ops::Deref for CpuBytesMut<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.0.bytes()
    }
}

impl std::ops::DerefMut for CpuBytesMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.0.bytes_mut()
    }
}

impl std::fmt::Debug for CpuBytes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuBytes({} bytes)", self.len())
    }
}

impl std::fmt::Debug for CpuBytesMut<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CpuBytesMut({} bytes)", self.len())
    }
}

impl CpuArgs {
    /// What argument `i` is, or `None` past the last one.
    pub fn kind(&self, i: usize) -> Option<CpuArgKind> {
        self.values.get(i).map(|v| match v {
            CpuValue::Scalar(s) => CpuArgKind::Scalar(*s),
            CpuValue::Array {
                dtype, writable, ..
            } => CpuArgKind::Array {
                dtype: *dtype,
                writable: *writable,
            },
        })
    }

    /// Argument `i`, an array, for reading, as bytes. Errors as
    /// [`CpuArgs::input`] does.
    pub fn bytes(&self, i: usize) -> Result<CpuBytes<'_>> {
        let dtype = self.array_dtype(i)?;
        crate::element::with_dtype!(dtype, T => {
            let guard = self.input::<T>(i)?;
            Ok(CpuBytes(Box::new(Guard {
                guard,
                view: |g| bytemuck::cast_slice::<T, u8>(&g[..]),
                view_mut: None,
            })))
        })
    }

    /// Argument `i`, an array passed as `&mut`, for writing, as bytes.
    /// Errors as [`CpuArgs::output`] does.
    pub fn bytes_mut(&self, i: usize) -> Result<CpuBytesMut<'_>> {
        let dtype = self.array_dtype(i)?;
        crate::element::with_dtype!(dtype, T => {
            let guard = self.output::<T>(i)?;
            Ok(CpuBytesMut(Box::new(Guard {
                guard,
                view: |g| bytemuck::cast_slice::<T, u8>(&g[..]),
                view_mut: Some(|g| bytemuck::cast_slice_mut::<T, u8>(&mut g[..])),
            })))
        })
    }

    fn array_dtype(&self, i: usize) -> Result<DType> {
        match self.kind(i) {
            Some(CpuArgKind::Array { dtype, .. }) => Ok(dtype),
            Some(CpuArgKind::Scalar(s)) => Err(Error::KernelArgs {
                kernel: "(CPU implementation)".into(),
                message: format!("argument {i} is a {} value, not an array", s.dtype()),
            }),
            None => Err(Error::KernelArgs {
                kernel: "(CPU implementation)".into(),
                message: format!("argument {i} does not exist ({} arguments)", self.len()),
            }),
        }
    }
}
