//! `unigpu.Communicator`: one rank per context (NCCL on cuda contexts) and
//! its collectives on `unigpu.Array`s. The arrays are locked and checked by
//! the bindings' shared layer (`unigpu::binding`), as the C API's `ug_comm`
//! does.

use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use unigpu::binding::{self, Handle, SendRecvOp};
use unigpu::{Backend, Communicator, Context, ReduceOp};

use crate::array::PyArray;
use crate::context::PyContext;
use crate::errors::{call_err, err};

/// A group of ranks, one per GPU, that run collectives together.
#[pyclass(frozen, name = "Communicator", module = "unigpu")]
#[derive(Debug)]
pub struct PyCommunicator {
    comm: Communicator,
}

fn op_of(op: &str) -> PyResult<ReduceOp> {
    Ok(match op.trim().to_ascii_lowercase().as_str() {
        "sum" => ReduceOp::Sum,
        "max" => ReduceOp::Max,
        "min" => ReduceOp::Min,
        "avg" => ReduceOp::Avg,
        _ => {
            return Err(PyValueError::new_err(format!(
                "op {op:?} is not one of \"sum\", \"max\", \"min\", \"avg\""
            )));
        }
    })
}

/// The arrays of a list argument, with the names a refusal calls them by.
fn array_list<'py>(
    list: &Bound<'py, PyAny>,
    what: &str,
) -> PyResult<(Vec<Bound<'py, PyArray>>, Vec<String>)> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    let items = list
        .try_iter()
        .map_err(|_| PyTypeError::new_err(format!("`{what}` must be a list of unigpu.Arrays")))?;
    for (i, item) in items.enumerate() {
        let item = item?;
        let a = item.cast::<PyArray>().map_err(|_| {
            PyTypeError::new_err(format!(
                "`{what}[{i}]` must be a unigpu.Array, got {}",
                item.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        out.push(a.clone());
        names.push(format!("{what}[{i}]"));
    }
    Ok((out, names))
}

fn handles<'a>(arrays: &'a [Bound<'_, PyArray>]) -> Vec<Handle<'a>> {
    arrays.iter().map(|a| a.get().handle()).collect()
}

fn strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// The arrays of `send_recv`'s `(array, rank)` pairs, their names, and
/// the ranks.
type Pairs<'py> = (Vec<Bound<'py, PyArray>>, Vec<String>, Vec<usize>);

/// `(array, rank)` pairs of `send_recv`.
fn pairs<'py>(list: &Bound<'py, PyAny>, what: &str) -> PyResult<Pairs<'py>> {
    let mut out = Vec::new();
    let mut names = Vec::new();
    let mut ranks = Vec::new();
    let items = list.try_iter().map_err(|_| {
        PyTypeError::new_err(format!("`{what}` must be a list of (Array, rank) pairs"))
    })?;
    for (i, item) in items.enumerate() {
        let (a, rank): (Bound<'py, PyAny>, usize) = item?.extract().map_err(|_| {
            PyTypeError::new_err(format!("`{what}[{i}]` must be an (Array, rank) pair"))
        })?;
        let a = a.cast::<PyArray>().map_err(|_| {
            PyTypeError::new_err(format!("`{what}[{i}]`'s first item must be a unigpu.Array"))
        })?;
        out.push(a.clone());
        names.push(format!("{what}[{i}]"));
        ranks.push(rank);
    }
    Ok((out, names, ranks))
}

#[pymethods]
impl PyCommunicator {
    /// Every rank in this process, one per context (each on its own GPU,
    /// all of one backend): rank i is `contexts[i]`. Only cuda contexts
    /// have collectives (NCCL): other backends, or a machine without
    /// libnccl, raise `UnsupportedError` saying what to do.
    #[staticmethod]
    fn local(py: Python<'_>, contexts: Vec<Bound<'_, PyContext>>) -> PyResult<PyCommunicator> {
        let ctxs: Vec<Context> = contexts.iter().map(|c| c.get().ctx.clone()).collect();
        py.detach(|| Communicator::local(&ctxs))
            .map(|comm| PyCommunicator { comm })
            .map_err(err(py))
    }

    /// The library `backend`'s collectives run on (e.g. "NCCL 2.28.9
    /// (libnccl.so.2)"); raises `UnsupportedError` saying why there is none.
    #[staticmethod]
    fn library(py: Python<'_>, backend: &str) -> PyResult<String> {
        let b: Backend = backend.parse().map_err(|_| {
            PyValueError::new_err(format!(
                "unknown backend {backend:?}: one of cuda, torch, vulkan, cpu"
            ))
        })?;
        Communicator::library(b).map_err(err(py))
    }

    /// Ranks in the whole communicator.
    #[getter]
    fn world_size(&self) -> usize {
        self.comm.world_size()
    }

    /// In place: every array becomes the element-wise reduction (`op`:
    /// "sum", "max", "min", "avg") of the arrays of every rank. One array
    /// per local rank (on its rank's context, any order), all of one dtype
    /// and length, whole arrays (not views). Returns once enqueued; wait
    /// with `wait()`.
    #[pyo3(signature = (arrays, op="sum"))]
    fn all_reduce(&self, py: Python<'_>, arrays: &Bound<'_, PyAny>, op: &str) -> PyResult<()> {
        let op = op_of(op)?;
        let (a, names) = array_list(arrays, "arrays")?;
        let h = handles(&a);
        let n = strs(&names);
        py.detach(|| binding::all_reduce(&self.comm, &h, &n, op))
            .map_err(call_err(py))
    }

    /// In place: every array becomes rank `root`'s.
    #[pyo3(signature = (arrays, root=0))]
    fn broadcast(&self, py: Python<'_>, arrays: &Bound<'_, PyAny>, root: usize) -> PyResult<()> {
        let (a, names) = array_list(arrays, "arrays")?;
        let h = handles(&a);
        let n = strs(&names);
        py.detach(|| binding::broadcast(&self.comm, &h, &n, root))
            .map_err(call_err(py))
    }

    /// `recv` (one per local rank) gets the reduction of every rank's
    /// `send`.
    #[pyo3(signature = (send, recv, op="sum"))]
    fn all_reduce_into(
        &self,
        py: Python<'_>,
        send: &Bound<'_, PyAny>,
        recv: &Bound<'_, PyAny>,
        op: &str,
    ) -> PyResult<()> {
        let op = SendRecvOp::AllReduce(op_of(op)?);
        self.send_recv_op(py, op, send, recv)
    }

    /// Every rank's `send` (n elements), concatenated in rank order, into
    /// every `recv` (n × world size elements).
    fn all_gather(
        &self,
        py: Python<'_>,
        send: &Bound<'_, PyAny>,
        recv: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.send_recv_op(py, SendRecvOp::AllGather, send, recv)
    }

    /// The reduction of every rank's `send` (n × world size elements), of
    /// which rank r's `recv` gets the r-th block of n.
    #[pyo3(signature = (send, recv, op="sum"))]
    fn reduce_scatter(
        &self,
        py: Python<'_>,
        send: &Bound<'_, PyAny>,
        recv: &Bound<'_, PyAny>,
        op: &str,
    ) -> PyResult<()> {
        let op = SendRecvOp::ReduceScatter(op_of(op)?);
        self.send_recv_op(py, op, send, recv)
    }

    /// Sends each `(array, to_rank)` of `sends` and receives into each
    /// `(array, from_rank)` of `recvs`, in one call (where both ends are
    /// ranks of this process the pair must be in one call).
    #[pyo3(signature = (sends=None, recvs=None))]
    fn send_recv(
        &self,
        py: Python<'_>,
        sends: Option<&Bound<'_, PyAny>>,
        recvs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let empty = pyo3::types::PyList::empty(py).into_any();
        let (s, sn, to) = pairs(sends.unwrap_or(&empty), "sends")?;
        let (r, rn, from) = pairs(recvs.unwrap_or(&empty), "recvs")?;
        let (sh, rh) = (handles(&s), handles(&r));
        let (sn, rn) = (strs(&sn), strs(&rn));
        py.detach(|| binding::send_recv(&self.comm, &sh, &sn, &to, &rh, &rn, &from))
            .map_err(call_err(py))
    }

    /// Blocks until the collectives enqueued so far have finished, for at
    /// most `timeout` seconds (default: the communicator's deadline); past
    /// it the communicator is aborted and `CollectiveError` is raised.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<()> {
        let timeout = match timeout {
            None => self.comm.timeout(),
            Some(t) if t.is_finite() && t >= 0.0 => Duration::from_secs_f64(t),
            Some(t) => {
                return Err(PyValueError::new_err(format!(
                    "timeout must be a finite number of seconds >= 0, got {t}"
                )));
            }
        };
        py.detach(|| self.comm.wait_timeout(timeout))
            .map_err(err(py))
    }

    /// Gives up: stops the pending collectives; every later call fails.
    fn abort(&self) {
        self.comm.abort();
    }

    fn __repr__(&self) -> String {
        format!(
            "unigpu.Communicator(world_size={}, local_ranks={:?})",
            self.comm.world_size(),
            self.comm.local_ranks()
        )
    }
}

impl PyCommunicator {
    fn send_recv_op(
        &self,
        py: Python<'_>,
        op: SendRecvOp,
        send: &Bound<'_, PyAny>,
        recv: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (s, sn) = array_list(send, "send")?;
        let (r, rn) = array_list(recv, "recv")?;
        let (sh, rh) = (handles(&s), handles(&r));
        let (sn, rn) = (strs(&sn), strs(&rn));
        py.detach(|| binding::collective(&self.comm, op, &sh, &sn, &rh, &rn))
            .map_err(call_err(py))
    }
}
