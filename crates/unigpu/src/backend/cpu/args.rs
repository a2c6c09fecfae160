//! What a CPU implementation of a kernel gets: the launch's arguments by
//! position, arrays as locked host slices.

use std::any::Any;
use std::sync::Arc;

use unigpu_core::dlpack::{HostArray, HostRead, HostWrite};

use super::tracker::Tracker;
use crate::element::{DType, Element};
use crate::error::{Error, Result};
use unigpu_core::Grid;
use unigpu_core::Scalar;

/// An array as a CPU launch argument.
pub(crate) struct CpuArg {
    pub(crate) data: Arc<dyn Any + Send + Sync>,
    pub(crate) uses: Tracker,
    pub(crate) dtype: DType,
    pub(crate) writable: bool,
}

/// A CPU implementation of a kernel: gets the launch's arguments by
/// position and does the kernel's work over host slices.
pub type CpuKernelFn = Arc<dyn Fn(&CpuArgs) -> Result<()> + Send + Sync>;

/// What a CPU implementation of a kernel sees: the launch's arguments by
/// position, with arrays as locked host slices.
pub struct CpuArgs {
    pub(crate) values: Vec<CpuValue>,
    pub(crate) grid: Grid,
}

#[derive(Clone)]
pub(crate) enum CpuValue {
    Scalar(Scalar),
    Array {
        data: Arc<dyn Any + Send + Sync>,
        dtype: DType,
        writable: bool,
    },
}

/// The first pair `(i, j)` of array arguments over one memory where `i`
/// is written (see `check_distinct` in buffer.rs: only an array and its own
/// DLPack export imported again can be such a pair).
pub(crate) fn written_alias(values: &[CpuValue]) -> Option<(usize, usize)> {
    let same = |a: &CpuValue, b: &CpuValue| match (a, b) {
        (
            CpuValue::Array {
                data: da,
                dtype: ta,
                ..
            },
            CpuValue::Array {
                data: db,
                dtype: tb,
                ..
            },
        ) if ta == tb => crate::element::with_dtype!(*ta, T => {
            match (da.downcast_ref::<HostArray<T>>(), db.downcast_ref::<HostArray<T>>()) {
                (Some(x), Some(y)) => HostArray::ptr_eq(x, y),
                _ => false,
            }
        }),
        _ => false,
    };
    values.iter().enumerate().find_map(|(i, a)| {
        let written = matches!(a, CpuValue::Array { writable: true, .. });
        written
            .then(|| (0..values.len()).find(|&j| j != i && same(a, &values[j])))
            .flatten()
            .map(|j| (i, j))
    })
}

impl std::fmt::Debug for CpuArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuArgs")
            .field("len", &self.values.len())
            .field("grid", &self.grid)
            .finish()
    }
}

impl CpuArgs {
    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The launch's grid, for implementations that use it.
    pub fn grid(&self) -> Grid {
        self.grid
    }

    /// Argument `i` as a plain value of type `T`.
    pub fn scalar<T: Element>(&self, i: usize) -> Result<T> {
        match self.values.get(i) {
            Some(CpuValue::Scalar(s)) => s
                .get()
                .ok_or_else(|| arg_error(i, format!("is a {} value, not {}", s.dtype(), T::DTYPE))),
            Some(CpuValue::Array { dtype, .. }) => Err(arg_error(
                i,
                format!("is a GpuArray<{dtype}>, not a {} value", T::DTYPE),
            )),
            None => Err(arg_error(
                i,
                format!("does not exist ({} arguments)", self.len()),
            )),
        }
    }

    /// Argument `i`, an array, for reading.
    pub fn input<T: Element>(&self, i: usize) -> Result<HostRead<'_, T>> {
        Ok(self.array::<T>(i)?.read())
    }

    /// Argument `i`, an array passed as `&mut`, for writing.
    pub fn output<T: Element>(&self, i: usize) -> Result<HostWrite<'_, T>> {
        if let Some(CpuValue::Array {
            writable: false, ..
        }) = self.values.get(i)
        {
            return Err(arg_error(
                i,
                "was passed as &GpuArray; pass &mut to write it".into(),
            ));
        }
        Ok(self.array::<T>(i)?.write())
    }

    fn array<T: Element>(&self, i: usize) -> Result<&HostArray<T>> {
        match self.values.get(i) {
            Some(CpuValue::Array { data, dtype, .. }) => {
                data.downcast_ref::<HostArray<T>>().ok_or_else(|| {
                    arg_error(
                        i,
                        format!("is a GpuArray<{dtype}>, not GpuArray<{}>", T::DTYPE),
                    )
                })
            }
            Some(CpuValue::Scalar(s)) => Err(arg_error(
                i,
                format!("is a {} value, not an array", s.dtype()),
            )),
            None => Err(arg_error(
                i,
                format!("does not exist ({} arguments)", self.len()),
            )),
        }
    }
}

fn arg_error(i: usize, what: String) -> Error {
    Error::KernelArgs {
        kernel: "(CPU implementation)".into(),
        message: format!("argument {i} {what}"),
    }
}
