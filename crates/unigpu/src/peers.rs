//! The devices of a backend, and which of them reach each other's memory
//! directly (so that a copy between them needs no host memory).

use std::fmt;

use crate::{Backend, DeviceInfo, Result};

/// Every device of a backend, with its peer-access matrix. From
/// [`device_list`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceList {
    pub devices: Vec<DeviceInfo>,
    pub peers: PeerMatrix,
}

/// Which device reaches which: `can_access(from, to)` is true when device
/// `from` reads and writes device `to`'s memory directly (NVLink or PCIe
/// peer access on CUDA). [`crate::GpuArray::copy_to`] between two such
/// devices is one direct copy; between others it is staged through host
/// memory. Every device reaches itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerMatrix {
    n: usize,
    /// Row-major: `access[from * n + to]`.
    access: Vec<bool>,
}

impl PeerMatrix {
    /// The matrix of `n` devices, asking `can(from, to)` for each pair.
    pub(crate) fn build(n: usize, can: impl Fn(usize, usize) -> Result<bool>) -> Result<Self> {
        let mut access = Vec::with_capacity(n * n);
        for from in 0..n {
            for to in 0..n {
                access.push(from == to || can(from, to)?);
            }
        }
        Ok(PeerMatrix { n, access })
    }

    /// How many devices the matrix covers.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether device `from` reaches device `to`'s memory directly
    /// (false for devices past the end).
    pub fn can_access(&self, from: usize, to: usize) -> bool {
        from < self.n && to < self.n && self.access[from * self.n + to]
    }
}

impl fmt::Display for PeerMatrix {
    /// One row per device: `0: 0 1` lists the devices device 0 reaches.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for from in 0..self.n {
            let reached: Vec<String> = (0..self.n)
                .filter(|&to| self.can_access(from, to))
                .map(|to| to.to_string())
                .collect();
            writeln!(f, "{from}: reaches {}", reached.join(" "))?;
        }
        Ok(())
    }
}

/// Every device `backend` can use here, with which reach each other's
/// memory. A backend that cannot run here is an error that says why.
pub fn device_list(backend: Backend) -> Result<DeviceList> {
    let devices = crate::list_devices(backend)?;
    let peers = PeerMatrix::build(devices.len(), |from, to| {
        crate::backend::can_access_peer(backend, from, to)
    })?;
    Ok(DeviceList { devices, peers })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_answers_per_pair_and_every_device_reaches_itself() {
        // Devices 0 and 1 reach each other; 2 reaches nobody else.
        let m = PeerMatrix::build(3, |a, b| Ok(a < 2 && b < 2)).unwrap();
        assert!(m.can_access(0, 1) && m.can_access(1, 0));
        assert!(!m.can_access(0, 2) && !m.can_access(2, 0));
        assert!((0..3).all(|d| m.can_access(d, d)));
        assert!(!m.can_access(3, 0), "past the end");
        assert_eq!(
            m.to_string(),
            "0: reaches 0 1\n1: reaches 0 1\n2: reaches 2\n"
        );
    }

    #[test]
    fn the_host_backend_lists_one_device_that_reaches_itself() {
        let list = device_list(Backend::HOST).unwrap();
        assert_eq!(list.devices.len(), 1);
        assert_eq!(list.peers.len(), 1);
        assert!(list.peers.can_access(0, 0));
    }
}
