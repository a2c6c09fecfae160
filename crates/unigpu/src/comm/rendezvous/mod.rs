//! How the processes of one job find each other: the process holding rank
//! 0 makes the communicator's id and hands it, with the world size, to
//! every other process, through a TCP address or a shared file
//! (docs/multi-gpu.md has the protocols byte by byte).
//!
//! Every step has the rendezvous's deadline: a rank that never arrives is
//! a [`Error::Timeout`] naming the missing ranks, never a hang.

mod file;
mod roll;
mod tcp;

use roll::Hello;
pub use roll::{CommId, ID_LEN};

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// Where the processes meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Meeting {
    /// `host:port`: rank 0's process listens there, the others connect.
    Tcp(String),
    /// A path every process can read and write (a shared file system for
    /// several machines): rank 0 writes the id there, the others
    /// acknowledge it beside it.
    File(PathBuf),
}

/// One process's part in a rendezvous: where to meet, the world size, and
/// its first rank (a process with k GPUs holds ranks `rank..rank + k`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendezvous {
    meeting: Meeting,
    world_size: usize,
    rank: usize,
    timeout: Duration,
}

/// `UNIGPU_RENDEZVOUS`: `tcp://host:port` or `file:///path`.
pub const RENDEZVOUS_ENV: &str = "UNIGPU_RENDEZVOUS";
/// `UNIGPU_WORLD_SIZE` (else torchrun's `WORLD_SIZE`).
pub const WORLD_SIZE_ENV: &str = "UNIGPU_WORLD_SIZE";
/// `UNIGPU_RANK` (else torchrun's `RANK`): this process's first rank.
pub const RANK_ENV: &str = "UNIGPU_RANK";
/// `UNIGPU_COMM_TIMEOUT_SECS`: the deadline of every wait.
pub const TIMEOUT_ENV: &str = "UNIGPU_COMM_TIMEOUT_SECS";

impl Rendezvous {
    /// How long each step may wait unless told otherwise.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

    /// Meet at `addr` (`host:port`), where rank 0's process listens.
    pub fn tcp(addr: impl Into<String>, world_size: usize, rank: usize) -> Rendezvous {
        Rendezvous::new(Meeting::Tcp(addr.into()), world_size, rank)
    }

    /// Meet through the file `path`, which must not be in use by another
    /// job: use a path of this job's own (a stale file left by a crashed
    /// run is replaced by rank 0, but a rank that read it first times out).
    pub fn file(path: impl Into<PathBuf>, world_size: usize, rank: usize) -> Rendezvous {
        Rendezvous::new(Meeting::File(path.into()), world_size, rank)
    }

    fn new(meeting: Meeting, world_size: usize, rank: usize) -> Rendezvous {
        Rendezvous {
            meeting,
            world_size,
            rank,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// The same rendezvous with another deadline for each step (and for
    /// the communicator made through it).
    pub fn with_timeout(mut self, timeout: Duration) -> Rendezvous {
        self.timeout = timeout;
        self
    }

    /// From the environment, so that one program runs unchanged on one
    /// machine or many: [`RENDEZVOUS_ENV`] (or torchrun's `MASTER_ADDR`
    /// and `MASTER_PORT`, as TCP), [`WORLD_SIZE_ENV`] (or `WORLD_SIZE`),
    /// [`RANK_ENV`] (or `RANK`), and [`TIMEOUT_ENV`].
    pub fn from_env() -> Result<Rendezvous> {
        let var = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| std::env::var(n).ok().filter(|v| !v.is_empty()))
        };
        let number = |names: &[&str]| -> Result<Option<usize>> {
            match var(names) {
                None => Ok(None),
                Some(v) => v.trim().parse().map(Some).map_err(|_| Error::Rendezvous {
                    message: format!("{} = {v:?} is not a whole number", names[0]),
                }),
            }
        };
        let meeting = match var(&[RENDEZVOUS_ENV]) {
            Some(spec) => parse_meeting(&spec)?,
            None => match (var(&["MASTER_ADDR"]), var(&["MASTER_PORT"])) {
                (Some(host), Some(port)) => Meeting::Tcp(format!("{host}:{port}")),
                _ => {
                    return Err(Error::Rendezvous {
                        message: format!(
                            "set {RENDEZVOUS_ENV} (tcp://host:port or file:///path), or \
                             MASTER_ADDR and MASTER_PORT"
                        ),
                    });
                }
            },
        };
        let world_size = number(&[WORLD_SIZE_ENV, "WORLD_SIZE"])?.ok_or(Error::Rendezvous {
            message: format!("set {WORLD_SIZE_ENV} (or WORLD_SIZE) to the number of ranks"),
        })?;
        let rank = number(&[RANK_ENV, "RANK"])?.ok_or(Error::Rendezvous {
            message: format!("set {RANK_ENV} (or RANK) to this process's first rank"),
        })?;
        let mut r = Rendezvous::new(meeting, world_size, rank);
        if let Some(secs) = number(&[TIMEOUT_ENV])? {
            r.timeout = Duration::from_secs(secs as u64);
        }
        Ok(r)
    }

    pub fn meeting(&self) -> &Meeting {
        &self.meeting
    }

    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// This process's first rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Meets the other processes as the holder of ranks `rank..rank +
    /// local_ranks`: rank 0's process calls `make_id` and hands its id to
    /// every other; each returns the id once the world is known to agree
    /// (rank 0's process: once every rank has arrived). A rank that never
    /// arrives is a [`Error::Timeout`]; peers that disagree on the world
    /// size, or ranks claimed twice, are a [`Error::Rendezvous`].
    pub fn exchange(
        &self,
        local_ranks: usize,
        make_id: impl FnOnce() -> Result<CommId>,
    ) -> Result<CommId> {
        if local_ranks == 0 || self.rank + local_ranks > self.world_size {
            return Err(Error::Rendezvous {
                message: format!(
                    "ranks {}..{} do not fit a world of {} (rank {} holds {local_ranks} GPU(s))",
                    self.rank,
                    self.rank + local_ranks,
                    self.world_size,
                    self.rank
                ),
            });
        }
        let deadline = Instant::now() + self.timeout;
        let hello = Hello {
            world: self.world_size,
            first: self.rank,
            count: local_ranks,
        };
        match (&self.meeting, self.rank == 0) {
            (Meeting::Tcp(addr), true) => {
                tcp::serve(addr, hello, make_id()?, self.timeout, deadline)
            }
            (Meeting::Tcp(addr), false) => tcp::join(addr, hello, self.timeout, deadline),
            (Meeting::File(path), true) => {
                file::serve(path, hello, make_id()?, self.timeout, deadline)
            }
            (Meeting::File(path), false) => file::join(path, hello, self.timeout, deadline),
        }
    }
}

/// `tcp://host:port`, `file:///path` or `file:path`.
fn parse_meeting(spec: &str) -> Result<Meeting> {
    if let Some(addr) = spec.strip_prefix("tcp://") {
        return Ok(Meeting::Tcp(addr.to_string()));
    }
    if let Some(path) = spec.strip_prefix("file://").or(spec.strip_prefix("file:")) {
        return Ok(Meeting::File(PathBuf::from(path)));
    }
    Err(Error::Rendezvous {
        message: format!("{RENDEZVOUS_ENV} = {spec:?}: expected tcp://host:port or file:///path"),
    })
}

#[cfg(test)]
mod tests {
    use super::roll::{Roll, hex, unhex};
    use super::*;

    #[test]
    fn a_roll_admits_each_rank_once_in_one_world() {
        let mut roll = Roll::new(Hello {
            world: 4,
            first: 0,
            count: 1,
        });
        assert!(!roll.complete());
        assert_eq!(roll.missing(), "1, 2, 3");
        roll.admit(Hello {
            world: 4,
            first: 2,
            count: 2,
        })
        .unwrap();
        assert_eq!(roll.missing(), "1");
        let e = roll
            .admit(Hello {
                world: 4,
                first: 3,
                count: 1,
            })
            .unwrap_err();
        assert!(e.contains("rank 3 arrived twice"), "{e}");
        let e = roll
            .admit(Hello {
                world: 5,
                first: 1,
                count: 1,
            })
            .unwrap_err();
        assert!(e.contains("world of 5"), "{e}");
        let e = roll
            .admit(Hello {
                world: 4,
                first: 3,
                count: 2,
            })
            .unwrap_err();
        assert!(e.contains("do not fit"), "{e}");
        roll.admit(Hello {
            world: 4,
            first: 1,
            count: 1,
        })
        .unwrap();
        assert!(roll.complete());
    }

    #[test]
    fn ids_survive_hex() {
        let id: CommId = std::array::from_fn(|i| (i * 7 + 3) as u8);
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex(&"zz".repeat(ID_LEN)), None);
    }

    #[test]
    fn meetings_parse_from_their_urls() {
        assert_eq!(
            parse_meeting("tcp://10.0.0.1:29500").unwrap(),
            Meeting::Tcp("10.0.0.1:29500".into())
        );
        assert_eq!(
            parse_meeting("file:///tmp/job/rdv").unwrap(),
            Meeting::File("/tmp/job/rdv".into())
        );
        let e = parse_meeting("udp://x").unwrap_err();
        assert!(e.to_string().contains("tcp://host:port"), "{e}");
    }

    #[test]
    fn ranks_past_the_world_are_refused_before_anything_is_tried() {
        let r = Rendezvous::tcp("127.0.0.1:1", 2, 1);
        let e = r
            .exchange(2, || unreachable!("rank 1 makes no id"))
            .unwrap_err();
        assert!(matches!(e, Error::Rendezvous { .. }), "{e}");
    }
}
