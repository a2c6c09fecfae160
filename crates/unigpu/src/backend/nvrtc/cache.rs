//! Compiled-kernel caches: one in memory for this process, one on disk
//! shared between processes. Both are keyed by a hash of everything that
//! changes the machine code: source, options, architecture and NVRTC
//! version.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use unigpu_cuda_safe::nvrtc::Compiled;

/// Names the on-disk cache folder; `off` disables the disk cache.
pub const CACHE_DIR_ENV: &str = "UNIGPU_CACHE_DIR";

pub(crate) type Key = [u8; 32];

pub(crate) fn key(source: &str, options: &[String], arch: (i32, i32), nvrtc: (i32, i32)) -> Key {
    let mut h = blake3::Hasher::new();
    h.update(b"unigpu-kernel-v1\0");
    h.update(&(source.len() as u64).to_le_bytes());
    h.update(source.as_bytes());
    for o in options {
        h.update(&(o.len() as u64).to_le_bytes());
        h.update(o.as_bytes());
    }
    for v in [arch.0, arch.1, nvrtc.0, nvrtc.1] {
        h.update(&v.to_le_bytes());
    }
    *h.finalize().as_bytes()
}

/// This process's compiled programs, shared by every context.
pub(crate) fn memory() -> &'static Mutex<HashMap<Key, Arc<Compiled>>> {
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<Compiled>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// `$UNIGPU_CACHE_DIR`, else `$XDG_CACHE_HOME/unigpu/kernels`, else
/// `~/.cache/unigpu/kernels`; `None` when disabled or no home is known.
pub fn disk_dir() -> Option<PathBuf> {
    match std::env::var_os(CACHE_DIR_ENV) {
        Some(v) if v == "off" => None,
        Some(v) if !v.is_empty() => Some(PathBuf::from(v)),
        _ => {
            let base = std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
            Some(base.join("unigpu").join("kernels"))
        }
    }
}

fn file_for(dir: &Path, key: &Key) -> PathBuf {
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{hex}.ugk"))
}

/// File layout: magic, name count, (len, name, len, lowered) pairs, then
/// the CUBIN. Anything that does not parse is treated as a miss.
const MAGIC: &[u8; 8] = b"UGKCACH1";

pub(crate) fn load(key: &Key) -> Option<Compiled> {
    let bytes = std::fs::read(file_for(&disk_dir()?, key)).ok()?;
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        rest = tail;
        Some(head)
    };
    let read_u64 = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or([0xff; 8])) as usize;
    let count = read_u64(take(8)?);
    let mut lowered_names = Vec::new();
    for _ in 0..count.min(1 << 16) {
        let n = read_u64(take(8)?);
        let name = String::from_utf8(take(n)?.to_vec()).ok()?;
        let n = read_u64(take(8)?);
        let lowered = String::from_utf8(take(n)?.to_vec()).ok()?;
        lowered_names.push((name, lowered));
    }
    let cubin = rest.to_vec();
    (!cubin.is_empty()).then_some(Compiled {
        cubin,
        lowered_names,
        log: String::new(),
    })
}

/// Best effort: a cache that cannot be written only costs a recompile.
pub(crate) fn store(key: &Key, compiled: &Compiled) {
    let Some(dir) = disk_dir() else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let mut bytes = MAGIC.to_vec();
    bytes.extend((compiled.lowered_names.len() as u64).to_le_bytes());
    for (name, lowered) in &compiled.lowered_names {
        for s in [name, lowered] {
            bytes.extend((s.len() as u64).to_le_bytes());
            bytes.extend(s.as_bytes());
        }
    }
    bytes.extend(&compiled.cubin);
    let target = file_for(&dir, key);
    // Write then rename, so a concurrent reader never sees half a file.
    let tmp = target.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, &bytes).is_ok() && std::fs::rename(&tmp, &target).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}
