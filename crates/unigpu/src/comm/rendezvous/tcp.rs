//! The rendezvous over TCP. Rank 0's process listens; each other process
//! connects (retrying until the deadline, since it may start first) and
//! says who it is; once every rank has arrived, rank 0 answers each with
//! the id. All integers are little-endian u32:
//!
//! ```text
//! hello  (to rank 0):   "UGRV" version=1 world first_rank rank_count
//! answer (from rank 0): "UGRV" 0 world id[128]          -- the id
//!                       "UGRV" 1 length message[length] -- why not (UTF-8)
//! ```

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::roll::{CommId, Hello, ID_LEN, Roll, timed_out};
use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"UGRV";
const VERSION: u32 = 1;
const OK: u32 = 0;
const REFUSED: u32 = 1;
/// Longest refusal message read back.
const MAX_MESSAGE: u32 = 4096;

/// Rank 0's side: listens at `addr` until every rank has said hello, then
/// answers each with `id`.
pub(super) fn serve(
    addr: &str,
    host: Hello,
    id: CommId,
    timeout: Duration,
    deadline: Instant,
) -> Result<CommId> {
    let listener = TcpListener::bind(addr).map_err(|e| Error::Rendezvous {
        message: format!("rank 0 cannot listen at {addr}: {e} (is another job using the port?)"),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io_error("listening", addr, e))?;
    let mut roll = Roll::new(host);
    let mut peers: Vec<TcpStream> = Vec::new();
    while !roll.complete() {
        match listener.accept() {
            Ok((mut stream, _)) => {
                // A connection that does not speak the protocol (a port
                // scan, a stray client) is dropped; the rendezvous goes on.
                let Ok(hello) = read_hello(&mut stream, deadline) else {
                    continue;
                };
                if let Err(why) = roll.admit(hello) {
                    let message = format!("rank 0 at {addr} refused ranks: {why}");
                    refuse(&mut stream, &message);
                    for mut p in peers {
                        refuse(&mut p, &message);
                    }
                    return Err(Error::Rendezvous { message });
                }
                peers.push(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let what = format!(
                        "rank 0 at {addr} waited for ranks {} of {}, which never arrived",
                        roll.missing(),
                        roll.world
                    );
                    for mut p in peers {
                        refuse(&mut p, &what);
                    }
                    return Err(timed_out(timeout, what));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(io_error("accepting a rank", addr, e)),
        }
    }
    let mut answer = Vec::with_capacity(12 + ID_LEN);
    answer.extend_from_slice(MAGIC);
    answer.extend_from_slice(&OK.to_le_bytes());
    answer.extend_from_slice(&(host.world as u32).to_le_bytes());
    answer.extend_from_slice(&id);
    for mut p in peers {
        p.write_all(&answer)
            .map_err(|e| io_error("answering a rank", addr, e))?;
    }
    Ok(id)
}

/// Another process's side: connects to `addr` (again and again until the
/// deadline), says hello, and waits for the id.
pub(super) fn join(addr: &str, me: Hello, timeout: Duration, deadline: Instant) -> Result<CommId> {
    let targets: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| Error::Rendezvous {
            message: format!("{addr} is not an address this machine can resolve: {e}"),
        })?
        .collect();
    let ranks = format!("ranks {}..{}", me.first, me.first + me.count);
    let mut stream = loop {
        if let Some(s) = targets.iter().find_map(|t| {
            let left = deadline.saturating_duration_since(Instant::now());
            TcpStream::connect_timeout(
                t,
                left.clamp(Duration::from_millis(1), Duration::from_secs(1)),
            )
            .ok()
        }) {
            break s;
        }
        if Instant::now() >= deadline {
            return Err(timed_out(
                timeout,
                format!("{ranks} could not reach rank 0 at {addr} (it never started listening)"),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut hello = Vec::with_capacity(20);
    hello.extend_from_slice(MAGIC);
    for v in [VERSION, me.world as u32, me.first as u32, me.count as u32] {
        hello.extend_from_slice(&v.to_le_bytes());
    }
    stream
        .write_all(&hello)
        .map_err(|e| io_error("saying hello", addr, e))?;
    let waiting = || {
        timed_out(
            timeout,
            format!(
                "{ranks} reached rank 0 at {addr}, which never answered (other ranks are missing, or rank 0 stopped)"
            ),
        )
    };
    let header = read_exact::<8>(&mut stream, deadline).map_err(|_| waiting())?;
    if &header[..4] != MAGIC {
        return Err(Error::Rendezvous {
            message: format!("{addr} answered, but not as a unigpu rendezvous"),
        });
    }
    match u32::from_le_bytes(header[4..8].try_into().unwrap_or_default()) {
        OK => {
            let world = read_exact::<4>(&mut stream, deadline).map_err(|_| waiting())?;
            let world = u32::from_le_bytes(world) as usize;
            if world != me.world {
                return Err(Error::Rendezvous {
                    message: format!(
                        "rank 0 runs a world of {world}, {ranks} expected {}",
                        me.world
                    ),
                });
            }
            read_exact::<ID_LEN>(&mut stream, deadline).map_err(|_| waiting())
        }
        _ => {
            let len =
                u32::from_le_bytes(read_exact::<4>(&mut stream, deadline).map_err(|_| waiting())?);
            let mut message = vec![0; len.min(MAX_MESSAGE) as usize];
            set_deadline(&stream, deadline).map_err(|_| waiting())?;
            stream.read_exact(&mut message).map_err(|_| waiting())?;
            Err(Error::Rendezvous {
                message: String::from_utf8_lossy(&message).into_owned(),
            })
        }
    }
}

fn read_hello(stream: &mut TcpStream, deadline: Instant) -> std::io::Result<Hello> {
    stream.set_nonblocking(false)?;
    let raw = read_exact::<20>(stream, deadline)?;
    let word = |i: usize| u32::from_le_bytes([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]) as usize;
    if &raw[..4] != MAGIC || word(4) != VERSION as usize {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not a unigpu hello",
        ));
    }
    Ok(Hello {
        world: word(8),
        first: word(12),
        count: word(16),
    })
}

/// Reads exactly `N` bytes, failing once the deadline passes.
fn read_exact<const N: usize>(
    stream: &mut TcpStream,
    deadline: Instant,
) -> std::io::Result<[u8; N]> {
    set_deadline(stream, deadline)?;
    let mut buf = [0u8; N];
    stream.read_exact(&mut buf)?;
    Ok(buf)
}

fn set_deadline(stream: &TcpStream, deadline: Instant) -> std::io::Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    // A zero timeout means "none" to the socket: wait at least a moment.
    stream.set_read_timeout(Some(left.max(Duration::from_millis(1))))
}

/// Tells a peer why the rendezvous failed; it may be gone already.
fn refuse(stream: &mut TcpStream, message: &str) {
    let text = &message.as_bytes()[..message.len().min(MAX_MESSAGE as usize)];
    let mut out = Vec::with_capacity(12 + text.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&REFUSED.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
    let _ = stream.write_all(&out);
}

fn io_error(what: &str, addr: &str, e: std::io::Error) -> Error {
    Error::Rendezvous {
        message: format!("{what} at {addr}: {e}"),
    }
}
