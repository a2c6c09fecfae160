//! Precompiled CUDA code: PTX text, a CUBIN (an ELF file for the CUDA
//! machine) or a fatbin (several of those in one container, as
//! `nvcc -fatbin` writes it). What each format looks like is checked here,
//! without a driver, before `cuModuleLoadData` reads the bytes: the driver
//! trusts an image's own headers, and takes anything it does not recognise
//! for PTX text, which it reads up to a NUL byte.

use std::fmt;

/// The format of precompiled CUDA code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageFormat {
    /// PTX assembly text, compiled for the device by the driver's JIT.
    Ptx,
    /// A CUBIN: machine code for one architecture, in an ELF file.
    Cubin,
    /// A fatbin: CUBINs for several architectures and, optionally, PTX.
    Fatbin,
}

impl fmt::Display for ImageFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ImageFormat::Ptx => "PTX",
            ImageFormat::Cubin => "CUBIN",
            ImageFormat::Fatbin => "fatbin",
        })
    }
}

/// A fatbin's first four bytes, little-endian (`fatBinaryHeader.magic`).
pub const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// An ELF file's first four bytes.
pub const ELF_MAGIC: [u8; 4] = [0x7f, b'E', b'L', b'F'];
/// `e_machine` of a CUBIN.
const EM_CUDA: u16 = 190;
/// A fatbin's header: magic (4), version (2), header size (2), size (8).
const FATBIN_HEADER: usize = 16;
/// An ELF64 file header.
const ELF64_HEADER: usize = 64;

impl ImageFormat {
    /// The format `bytes` look like: an ELF or fatbin magic number, or text
    /// with a `.version` directive for PTX; `None` for anything else.
    pub fn detect(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.starts_with(&ELF_MAGIC) {
            Some(ImageFormat::Cubin)
        } else if bytes.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
            Some(ImageFormat::Fatbin)
        } else if std::str::from_utf8(trim_nul(bytes)).is_ok_and(|t| t.contains(".version")) {
            Some(ImageFormat::Ptx)
        } else {
            None
        }
    }
}

/// Why `bytes` are not a well-formed `format` image, as far as that can be
/// told without a driver: the magic number, and that the headers' offsets
/// and sizes stay inside the bytes (a truncated file); for PTX, UTF-8 text
/// with no NUL byte before its end and a `.version` directive.
pub fn check(format: ImageFormat, bytes: &[u8]) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("the image is empty".into());
    }
    let found = match format {
        ImageFormat::Ptx => check_ptx(bytes),
        ImageFormat::Cubin => check_cubin(bytes),
        ImageFormat::Fatbin => check_fatbin(bytes),
    };
    found.map_err(|why| match ImageFormat::detect(bytes) {
        Some(other) if other != format => {
            format!("{why}; the bytes look like a {other} image: label them as one")
        }
        _ => why,
    })
}

fn check_ptx(bytes: &[u8]) -> Result<(), String> {
    let text = trim_nul(bytes);
    if let Some(at) = text.iter().position(|&b| b == 0) {
        return Err(format!(
            "PTX is text, but byte {at} of {} is NUL",
            bytes.len()
        ));
    }
    let text = std::str::from_utf8(text)
        .map_err(|e| format!("PTX is text, but the bytes are not UTF-8 ({e})"))?;
    if !text.contains(".version") {
        return Err("PTX text starts with a `.version` directive, and this has none".into());
    }
    Ok(())
}

fn check_cubin(bytes: &[u8]) -> Result<(), String> {
    if !bytes.starts_with(&ELF_MAGIC) {
        return Err(format!(
            "a CUBIN is an ELF file, starting 7f 45 4c 46 (\\x7fELF), but these bytes start {}",
            hex_start(bytes)
        ));
    }
    if bytes.len() < ELF64_HEADER {
        return Err(format!(
            "{} bytes are too few for an ELF header ({ELF64_HEADER})",
            bytes.len()
        ));
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return Err(format!(
            "a CUBIN is a 64-bit little-endian ELF file; this one has class {} and data encoding {}",
            bytes[4], bytes[5]
        ));
    }
    let machine = u16_at(bytes, 18);
    if machine != Some(EM_CUDA) {
        return Err(format!(
            "an ELF file for machine {}, not for CUDA ({EM_CUDA}): a host object or library, not a CUBIN",
            machine.unwrap_or(0)
        ));
    }
    let len = bytes.len() as u64;
    let table = |offset: usize, entsize: usize, count: usize| -> Option<(u64, u64, u64)> {
        Some((
            u64_at(bytes, offset)?,
            u64::from(u16_at(bytes, entsize)?),
            u64::from(u16_at(bytes, count)?),
        ))
    };
    let truncated = |what: &str| {
        format!("the ELF file is truncated or corrupt: its {what} lies past its {len} bytes")
    };
    // Section headers: e_shoff at 0x28, e_shentsize at 0x3a, e_shnum at 0x3c.
    let (shoff, shentsize, shnum) = table(0x28, 0x3a, 0x3c).ok_or_else(|| truncated("header"))?;
    let ends_inside = |start: u64, size: u64| start.checked_add(size).is_some_and(|e| e <= len);
    if shnum > 0 {
        if shentsize < 0x28 || !ends_inside(shoff, shentsize * shnum) {
            return Err(truncated("section header table"));
        }
        for i in 0..shnum {
            let at = (shoff + i * shentsize) as usize;
            let kind = u32_at(bytes, at + 4).unwrap_or(0);
            let (offset, size) = (
                u64_at(bytes, at + 0x18).unwrap_or(u64::MAX),
                u64_at(bytes, at + 0x20).unwrap_or(u64::MAX),
            );
            // SHT_NULL (0) and SHT_NOBITS (8) take no bytes of the file.
            if kind != 0 && kind != 8 && !ends_inside(offset, size) {
                return Err(truncated(&format!("section {i}")));
            }
        }
    }
    // Program headers: e_phoff at 0x20, e_phentsize at 0x36, e_phnum at 0x38.
    let (phoff, phentsize, phnum) = table(0x20, 0x36, 0x38).ok_or_else(|| truncated("header"))?;
    if phnum > 0 {
        if phentsize < 0x38 || !ends_inside(phoff, phentsize * phnum) {
            return Err(truncated("program header table"));
        }
        for i in 0..phnum {
            let at = (phoff + i * phentsize) as usize;
            let (offset, size) = (
                u64_at(bytes, at + 0x08).unwrap_or(u64::MAX),
                u64_at(bytes, at + 0x20).unwrap_or(u64::MAX),
            );
            if !ends_inside(offset, size) {
                return Err(truncated(&format!("segment {i}")));
            }
        }
    }
    Ok(())
}

fn check_fatbin(bytes: &[u8]) -> Result<(), String> {
    if !bytes.starts_with(&FATBIN_MAGIC.to_le_bytes()) {
        return Err(format!(
            "a fatbin starts with the magic number 0x{FATBIN_MAGIC:08X} (bytes 50 ed 55 ba), but these bytes start {}",
            hex_start(bytes)
        ));
    }
    let (Some(header), Some(size)) = (u16_at(bytes, 6), u64_at(bytes, 8)) else {
        return Err(format!(
            "{} bytes are too few for a fatbin header ({FATBIN_HEADER})",
            bytes.len()
        ));
    };
    let end = u64::from(header).checked_add(size);
    if usize::from(header) < FATBIN_HEADER || end.is_none_or(|e| e > bytes.len() as u64) {
        return Err(format!(
            "the fatbin is truncated or corrupt: its header says {header} + {size} bytes, the image has {}",
            bytes.len()
        ));
    }
    Ok(())
}

/// `bytes` without the NUL bytes that end them (a C string's terminator).
fn trim_nul(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &bytes[..end]
}

/// A copy of `bytes` with a NUL byte after them: PTX must end with one
/// (and its own NULs at the end are dropped first), and the driver,
/// reading a CUBIN or fatbin by its headers, ignores it.
pub fn terminated(format: ImageFormat, bytes: &[u8]) -> Vec<u8> {
    let bytes = match format {
        ImageFormat::Ptx => trim_nul(bytes),
        ImageFormat::Cubin | ImageFormat::Fatbin => bytes,
    };
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.extend_from_slice(bytes);
    out.push(0);
    out
}

/// The architecture PTX text is written for: the first word of its
/// `.target` directive (`sm_90a` of `.target sm_90a, debug`).
pub fn ptx_target(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(".target")?;
        rest.split(|c: char| c == ',' || c.is_whitespace())
            .find(|w| !w.is_empty())
    })
}

/// The version of PTX text (`8.5` of `.version 8.5`).
pub fn ptx_version(text: &str) -> Option<&str> {
    text.lines().find_map(|line| {
        let rest = line.trim_start().strip_prefix(".version")?;
        rest.split_whitespace().next()
    })
}

fn hex_start(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ELF64 header for the CUDA machine with no sections or segments.
    fn tiny_cubin() -> Vec<u8> {
        let mut b = vec![0u8; ELF64_HEADER];
        b[..4].copy_from_slice(&ELF_MAGIC);
        b[4] = 2;
        b[5] = 1;
        b[18..20].copy_from_slice(&EM_CUDA.to_le_bytes());
        b
    }

    #[test]
    fn each_format_has_its_magic() {
        assert_eq!(check(ImageFormat::Cubin, &tiny_cubin()), Ok(()));
        let mut fatbin = FATBIN_MAGIC.to_le_bytes().to_vec();
        fatbin.extend([1, 0, 16, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(check(ImageFormat::Fatbin, &fatbin), Ok(()));
        assert_eq!(
            check(ImageFormat::Ptx, b".version 8.5\n.target sm_90\n\0"),
            Ok(())
        );
        let e = check(ImageFormat::Cubin, &fatbin).unwrap_err();
        assert!(e.contains("look like a fatbin"), "{e}");
        let e = check(ImageFormat::Fatbin, &tiny_cubin()).unwrap_err();
        assert!(e.contains("look like a CUBIN"), "{e}");
        let e = check(ImageFormat::Ptx, &tiny_cubin()).unwrap_err();
        assert!(e.contains("look like a CUBIN"), "{e}");
    }

    #[test]
    fn truncated_headers_are_caught() {
        let mut cubin = tiny_cubin();
        cubin[0x28..0x30].copy_from_slice(&1000u64.to_le_bytes());
        cubin[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        cubin[0x3c..0x3e].copy_from_slice(&1u16.to_le_bytes());
        let e = check(ImageFormat::Cubin, &cubin).unwrap_err();
        assert!(e.contains("section header table"), "{e}");
        let mut host = tiny_cubin();
        host[18..20].copy_from_slice(&62u16.to_le_bytes()); // x86-64
        let e = check(ImageFormat::Cubin, &host).unwrap_err();
        assert!(e.contains("machine 62"), "{e}");
        let mut fatbin = FATBIN_MAGIC.to_le_bytes().to_vec();
        fatbin.extend([1, 0, 16, 0, 100, 0, 0, 0, 0, 0, 0, 0]);
        let e = check(ImageFormat::Fatbin, &fatbin).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
    }

    #[test]
    fn ptx_directives() {
        let text = "// c\n.version 8.5\n  .target sm_90a, debug\n.address_size 64\n";
        assert_eq!(ptx_target(text), Some("sm_90a"));
        assert_eq!(ptx_version(text), Some("8.5"));
        assert_eq!(terminated(ImageFormat::Ptx, b"ab\0\0"), b"ab\0");
        assert_eq!(terminated(ImageFormat::Ptx, b"ab"), b"ab\0");
        // A CUBIN's zeros at its end are part of it.
        assert_eq!(terminated(ImageFormat::Cubin, b"ab\0"), b"ab\0\0");
    }
}
