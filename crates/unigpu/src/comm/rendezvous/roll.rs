//! What the two protocols share: the id, a process's hello, the roll of
//! ranks that arrived, and the errors they raise.

use std::time::Duration;

use crate::Error;

/// Bytes in a communicator id (NCCL's `ncclUniqueId`).
pub const ID_LEN: usize = 128;

/// A communicator's id, made by rank 0 and shared by every rank.
pub type CommId = [u8; ID_LEN];

/// What a process says of itself: the world it expects, and its ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hello {
    pub(super) world: usize,
    pub(super) first: usize,
    pub(super) count: usize,
}

/// Which ranks have arrived, and whether a newcomer fits.
#[derive(Debug)]
pub(super) struct Roll {
    pub(super) world: usize,
    arrived: Vec<bool>,
}

impl Roll {
    pub(super) fn new(host: Hello) -> Roll {
        let mut roll = Roll {
            world: host.world,
            arrived: vec![false; host.world],
        };
        roll.arrived[host.first..host.first + host.count].fill(true);
        roll
    }

    /// Marks `h`'s ranks, or says why they do not fit.
    pub(super) fn admit(&mut self, h: Hello) -> std::result::Result<(), String> {
        if h.world != self.world {
            return Err(format!(
                "ranks {}..{} expect a world of {}, rank 0 one of {}",
                h.first,
                h.first + h.count,
                h.world,
                self.world
            ));
        }
        if h.count == 0 || h.first + h.count > self.world {
            return Err(format!(
                "ranks {}..{} do not fit a world of {}",
                h.first,
                h.first + h.count,
                self.world
            ));
        }
        if let Some(r) = (h.first..h.first + h.count).find(|&r| self.arrived[r]) {
            return Err(format!("rank {r} arrived twice"));
        }
        self.arrived[h.first..h.first + h.count].fill(true);
        Ok(())
    }

    pub(super) fn complete(&self) -> bool {
        self.arrived.iter().all(|&a| a)
    }

    /// "1, 3" for ranks 1 and 3 missing.
    pub(super) fn missing(&self) -> String {
        let m: Vec<String> = (0..self.world)
            .filter(|&r| !self.arrived[r])
            .map(|r| r.to_string())
            .collect();
        m.join(", ")
    }
}

/// The timeout error of a rendezvous step.
pub(super) fn timed_out(timeout: Duration, what: String) -> Error {
    Error::Timeout {
        what: format!("rendezvous: {what}"),
        after: timeout,
    }
}

pub(super) fn hex(id: &CommId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(text: &str) -> Option<CommId> {
    let text = text.trim();
    if text.len() != 2 * ID_LEN {
        return None;
    }
    let mut id = [0u8; ID_LEN];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}
