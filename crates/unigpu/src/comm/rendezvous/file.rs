//! The rendezvous through a shared file. Rank 0's process writes `PATH`
//! (through a temporary file and a rename, so a reader never sees half
//! of it); every other process waits for it, reads it, and acknowledges
//! it in `PATH.ack.<first rank>`; rank 0's process returns once every rank
//! has acknowledged, and removes the files. Both are text:
//!
//! ```text
//! PATH:              unigpu-rendezvous 1 / world N / token T / id <256 hex digits>
//! PATH.ack.<first>:  unigpu-rendezvous-ack 1 / world N / token T / ranks <first> <count>
//! ```
//!
//! (one field a line). The token, random per run, tells this run's
//! acknowledgements from a crashed run's leftovers.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::roll::{CommId, Hello, Roll, hex, timed_out, unhex};
use crate::{Error, Result};

const HEADER: &str = "unigpu-rendezvous 1";
const ACK_HEADER: &str = "unigpu-rendezvous-ack 1";
const POLL: Duration = Duration::from_millis(10);

/// Rank 0's side: writes the id, waits for every rank's acknowledgement.
pub(super) fn serve(
    path: &Path,
    host: Hello,
    id: CommId,
    timeout: Duration,
    deadline: Instant,
) -> Result<CommId> {
    let token = token();
    let text = format!(
        "{HEADER}\nworld {}\ntoken {token}\nid {}\n",
        host.world,
        hex(&id)
    );
    write_atomically(path, &text)?;
    let mut roll = Roll::new(host);
    let mut acks = Vec::new();
    while !roll.complete() {
        for (first, ack) in read_acks(path, host.world, token) {
            if acks.contains(&first) {
                continue;
            }
            if let Err(why) = roll.admit(ack) {
                let _ = std::fs::remove_file(path);
                return Err(Error::Rendezvous {
                    message: format!("{}: {why}", path.display()),
                });
            }
            acks.push(first);
        }
        if roll.complete() {
            break;
        }
        if Instant::now() >= deadline {
            let _ = std::fs::remove_file(path);
            return Err(timed_out(
                timeout,
                format!(
                    "rank 0 wrote {} and waited for ranks {} of {}, which never acknowledged it",
                    path.display(),
                    roll.missing(),
                    roll.world
                ),
            ));
        }
        std::thread::sleep(POLL);
    }
    let _ = std::fs::remove_file(path);
    for first in acks {
        let _ = std::fs::remove_file(ack_path(path, first));
    }
    Ok(id)
}

/// Another process's side: waits for rank 0's file, acknowledges it.
pub(super) fn join(path: &Path, me: Hello, timeout: Duration, deadline: Instant) -> Result<CommId> {
    let (world, token, id) = loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            match parse(&text) {
                Some(found) => break found,
                None => {
                    return Err(Error::Rendezvous {
                        message: format!("{} is not a unigpu rendezvous file", path.display()),
                    });
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(timed_out(
                timeout,
                format!(
                    "ranks {}..{} waited for rank 0 to write {}, which never appeared",
                    me.first,
                    me.first + me.count,
                    path.display()
                ),
            ));
        }
        std::thread::sleep(POLL);
    };
    if world != me.world {
        return Err(Error::Rendezvous {
            message: format!(
                "{} is for a world of {world}, ranks {}..{} expected {}",
                path.display(),
                me.first,
                me.first + me.count,
                me.world
            ),
        });
    }
    let ack = format!(
        "{ACK_HEADER}\nworld {world}\ntoken {token}\nranks {} {}\n",
        me.first, me.count
    );
    write_atomically(&ack_path(path, me.first), &ack)?;
    Ok(id)
}

fn ack_path(path: &Path, first: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".ack.{first}"));
    PathBuf::from(name)
}

/// The acknowledgements of this run (`token`) present now.
fn read_acks(path: &Path, world: usize, token: u64) -> Vec<(usize, Hello)> {
    (0..world)
        .filter_map(|first| {
            let text = std::fs::read_to_string(ack_path(path, first)).ok()?;
            let mut lines = text.lines();
            (lines.next()? == ACK_HEADER).then_some(())?;
            let w: usize = field(lines.next()?, "world")?.parse().ok()?;
            let t: u64 = field(lines.next()?, "token")?.parse().ok()?;
            let mut ranks = field(lines.next()?, "ranks")?.split(' ');
            let f: usize = ranks.next()?.parse().ok()?;
            let count: usize = ranks.next()?.parse().ok()?;
            (t == token && f == first).then_some((
                first,
                Hello {
                    world: w,
                    first,
                    count,
                },
            ))
        })
        .collect()
}

/// (world, token, id) from rank 0's file.
fn parse(text: &str) -> Option<(usize, u64, CommId)> {
    let mut lines = text.lines();
    (lines.next()? == HEADER).then_some(())?;
    let world = field(lines.next()?, "world")?.parse().ok()?;
    let token = field(lines.next()?, "token")?.parse().ok()?;
    let id = unhex(field(lines.next()?, "id")?)?;
    Some((world, token, id))
}

fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.strip_prefix(name)?.strip_prefix(' ')
}

/// Writes `text` to `path` so that a reader sees all of it or nothing.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp.{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Error::Rendezvous {
                message: format!("cannot write {}: {e}", path.display()),
            }
        })
}

/// Different for every run: the time and the process id, hashed.
fn token() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ (u64::from(std::process::id()) << 32);
    // splitmix64: spreads close inputs far apart.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}
