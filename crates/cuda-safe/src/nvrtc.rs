//! NVRTC: CUDA C++ source to a CUBIN for one architecture (or to PTX), with the
//! compiler's log on failure and the lowered (mangled) names of kernels.

use std::ffi::{CStr, CString, c_char};

use cudarc::nvrtc::sys::{self, nvrtcProgram, nvrtcResult};

use crate::error::{Result, SafeError};

/// What a successful compile produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    /// Machine code for the requested architecture, ready for `cuModuleLoadData`.
    pub cubin: Vec<u8>,
    /// (name expression, lowered name) for each kernel name asked for.
    pub lowered_names: Vec<(String, String)>,
    /// Warnings, if the compiler printed any.
    pub log: String,
}

/// NVRTC's (major, minor) version; part of every compile cache key.
pub fn version() -> Result<(i32, i32)> {
    nvrtc_usable()?;
    let (mut major, mut minor) = (0, 0);
    // SAFETY: both out-pointers are valid for writes; nvrtcVersion has no
    // other preconditions.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// Compiles `source` (named `name` in diagnostics) with `options`, asking
/// for the lowered name of each of `kernels`.
pub fn compile(
    source: &str,
    name: &str,
    options: &[String],
    kernels: &[String],
) -> Result<Compiled> {
    let kernels_c = kernels
        .iter()
        .map(|k| c_string("a kernel name", k))
        .collect::<Result<Vec<_>>>()?;
    let (program, log) = compiled_program(source, name, options, &kernels_c)?;
    let cubin = program.cubin()?;
    let lowered_names = kernels_c
        .iter()
        .zip(kernels)
        .map(|(k, name)| Ok((name.clone(), program.lowered_name(k)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Compiled {
        cubin,
        lowered_names,
        log,
    })
}

/// Compiles `source` to PTX text: `options` name a virtual architecture
/// (`--gpu-architecture=compute_90`). For tools and tests that need PTX
/// the way nvcc writes it (`nvcc -ptx`); kernels keep their lowered
/// (mangled) names unless declared `extern "C"`.
pub fn compile_ptx(source: &str, name: &str, options: &[String]) -> Result<String> {
    let (program, _log) = compiled_program(source, name, options, &[])?;
    program.ptx()
}

/// A program made from `source` and compiled with `options`, with the
/// name expressions `kernels` added, and the compiler's log.
fn compiled_program(
    source: &str,
    name: &str,
    options: &[String],
    kernels: &[CString],
) -> Result<(Program, String)> {
    nvrtc_usable()?;
    let source_c = c_string("the kernel source", source)?;
    let name_c = c_string("the program name", name)?;
    let options_c = options
        .iter()
        .map(|o| c_string("a compile option", o))
        .collect::<Result<Vec<_>>>()?;

    let program = Program::create(&source_c, &name_c)?;
    for k in kernels {
        // SAFETY: the program is live and `k` outlives the call.
        check("nvrtcAddNameExpression", unsafe {
            sys::nvrtcAddNameExpression(program.0, k.as_ptr())
        })?;
    }
    let option_ptrs: Vec<*const c_char> = options_c.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: the program is live; `option_ptrs` holds `len` valid C strings
    // that outlive the call.
    let status = unsafe {
        sys::nvrtcCompileProgram(program.0, option_ptrs.len() as i32, option_ptrs.as_ptr())
    };
    let log = program.log()?;
    if status != nvrtcResult::NVRTC_SUCCESS {
        let log = if log.trim().is_empty() {
            format!(
                "{} ({status:?}) with no log; options: {}",
                error_string(status),
                options.join(" ")
            )
        } else {
            log
        };
        return Err(SafeError::Compile { log });
    }
    Ok((program, log))
}

struct Program(nvrtcProgram);

impl Program {
    fn create(source: &CStr, name: &CStr) -> Result<Self> {
        let mut prog: nvrtcProgram = std::ptr::null_mut();
        // SAFETY: `prog` is a valid out-pointer; source and name are C strings
        // that NVRTC copies; no headers are passed (count 0, null arrays).
        check("nvrtcCreateProgram", unsafe {
            sys::nvrtcCreateProgram(
                &mut prog,
                source.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        })?;
        Ok(Program(prog))
    }

    fn log(&self) -> Result<String> {
        let mut size = 0usize;
        // SAFETY: the program is live; `size` is a valid out-pointer.
        check("nvrtcGetProgramLogSize", unsafe {
            sys::nvrtcGetProgramLogSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has room for the `size` bytes NVRTC reported.
        check("nvrtcGetProgramLog", unsafe {
            sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr().cast())
        })?;
        Ok(cstr_bytes_to_string(&buf))
    }

    fn cubin(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a valid out-pointer.
        check("nvrtcGetCUBINSize", unsafe {
            sys::nvrtcGetCUBINSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size];
        // SAFETY: `buf` has room for the `size` bytes NVRTC reported.
        check("nvrtcGetCUBIN", unsafe {
            sys::nvrtcGetCUBIN(self.0, buf.as_mut_ptr().cast())
        })?;
        Ok(buf)
    }

    fn ptx(&self) -> Result<String> {
        let mut size = 0usize;
        // SAFETY: the program is live and compiled; `size` is a valid out-pointer.
        check("nvrtcGetPTXSize", unsafe {
            sys::nvrtcGetPTXSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has room for the `size` bytes NVRTC reported.
        check("nvrtcGetPTX", unsafe {
            sys::nvrtcGetPTX(self.0, buf.as_mut_ptr().cast())
        })?;
        Ok(cstr_bytes_to_string(&buf))
    }

    fn lowered_name(&self, expression: &CStr) -> Result<String> {
        let mut lowered: *const c_char = std::ptr::null();
        // SAFETY: the program is live and compiled, and `expression` was
        // added before compiling; `lowered` is a valid out-pointer.
        check("nvrtcGetLoweredName", unsafe {
            sys::nvrtcGetLoweredName(self.0, expression.as_ptr(), &mut lowered)
        })?;
        // SAFETY: NVRTC returns a NUL-terminated string owned by the program,
        // which is still live; it is copied before the program is destroyed.
        Ok(unsafe { CStr::from_ptr(lowered) }
            .to_string_lossy()
            .into_owned())
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by nvrtcCreateProgram and is
        // destroyed once; a failure here only leaks host memory.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

fn nvrtc_usable() -> Result<()> {
    match &unigpu_cuda_sys::probe().nvrtc.reason {
        Some(reason) => Err(SafeError::Unavailable {
            reason: format!("libnvrtc: {reason}"),
        }),
        None => Ok(()),
    }
}

fn c_string(what: &str, s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| SafeError::Compile {
        log: format!("{what} contains a NUL byte, which NVRTC cannot accept"),
    })
}

fn cstr_bytes_to_string(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn error_string(status: nvrtcResult) -> String {
    // SAFETY: nvrtcGetErrorString returns a static NUL-terminated string for
    // any status value.
    let text = unsafe { sys::nvrtcGetErrorString(status) };
    if text.is_null() {
        return format!("{status:?}");
    }
    // SAFETY: non-null, static, NUL-terminated (above).
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

fn check(call: &'static str, status: nvrtcResult) -> Result<()> {
    if status == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(SafeError::Driver {
            call,
            code: status as u32,
            name: format!("{status:?}"),
            message: error_string(status),
        })
    }
}
