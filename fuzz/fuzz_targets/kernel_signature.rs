//! The kernel declaration parser (`unigpu::kernel::parse_kernels`) on
//! any source, and the launch-argument check against what it read (or
//! against random declarations): launches of `Kernel::cpu_only` kernels
//! with random scalars and arrays on the CPU backend.
//!
//! Input: the source up to the first NUL byte; the bytes after it choose
//! the launches.
//!
//! Properties: never a panic; every kernel found is named by an identifier
//! that occurs in the source; a launch succeeds exactly when its arguments
//! fit the declaration (count, scalar dtypes, array dtypes; no declaration
//! means no check), else fails with `Error::KernelArgs` naming the kernel;
//! an accepted launch hands the CPU implementation exactly the arguments
//! given (kinds, dtypes, lengths), and what it writes reaches the arrays.

#![no_main]

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use unigpu::kernel::{CpuArgKind, ParamKind, parse_kernels};
use unigpu::{AnyArray, Arg, Backend, Context, DType, Error, Grid, Kernel, Scalar};

const NAME: &str = "fuzz_kernel";
/// The byte a CPU implementation writes into every output array.
const MARK: u8 = 0xA5;

fn ctx() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::new(Backend::Cpu, 0).expect("the CPU backend"))
}

fn dtype(u: &mut Unstructured<'_>) -> Result<DType> {
    u.choose(&DType::ALL).copied()
}

/// One launch argument, as the fuzzer describes it.
#[derive(Debug, Clone, Copy)]
enum FuzzArg {
    Scalar(DType, [u8; 8]),
    /// A read-only array of this dtype and length.
    In(DType, usize),
    /// A written array.
    Out(DType, usize),
    /// The same array as an earlier `In` argument, read again.
    SameAsIn(usize),
}

impl<'a> Arbitrary<'a> for FuzzArg {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u.int_in_range(0..=3u8)? {
            0 => FuzzArg::Scalar(dtype(u)?, u.arbitrary()?),
            1 => FuzzArg::In(dtype(u)?, u.int_in_range(0..=40)?),
            2 => FuzzArg::Out(dtype(u)?, u.int_in_range(0..=40)?),
            _ => FuzzArg::SameAsIn(u.arbitrary()?),
        })
    }
}

fn param(u: &mut Unstructured<'_>) -> Result<ParamKind> {
    Ok(if u.arbitrary()? {
        ParamKind::Scalar(dtype(u)?)
    } else {
        ParamKind::Pointer {
            dtype: if u.arbitrary()? {
                Some(dtype(u)?)
            } else {
                None
            },
            writable: u.arbitrary()?,
        }
    })
}

/// What the CPU implementation must see at one position.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Seen {
    Scalar(Scalar),
    Array {
        dtype: DType,
        writable: bool,
        len: usize,
    },
}

/// Whether `args` fit `params`, as the launch check defines it.
fn fits(params: Option<&[ParamKind]>, args: &[Seen]) -> bool {
    let Some(params) = params else { return true };
    params.len() == args.len()
        && params.iter().zip(args).all(|(p, a)| match (p, a) {
            (ParamKind::Scalar(d), Seen::Scalar(s)) => *d == s.dtype(),
            // A typed pointer that is not `const` may be written, so it
            // takes a written array only (launch.rs).
            (
                ParamKind::Pointer { dtype, writable },
                Seen::Array {
                    dtype: d,
                    writable: w,
                    ..
                },
            ) => dtype.is_none_or(|p| p == *d) && !(dtype.is_some() && *writable && !*w),
            _ => false,
        })
}

/// A kernel declared with `params` whose CPU implementation checks that it
/// got `expected`, reads every array and marks every output; any
/// difference is returned as an error (which the next sync reports).
fn kernel(params: Option<Vec<ParamKind>>, expected: Arc<Vec<Seen>>) -> Kernel {
    let fail = |message: String| Error::KernelArgs {
        kernel: NAME.into(),
        message,
    };
    Kernel::cpu_only(NAME, params, move |a| {
        if a.len() != expected.len() {
            return Err(fail(format!(
                "{} arguments, expected {}",
                a.len(),
                expected.len()
            )));
        }
        for (i, want) in expected.iter().enumerate() {
            match (a.kind(i), want) {
                (Some(CpuArgKind::Scalar(s)), Seen::Scalar(w)) if s == *w => {}
                (
                    Some(CpuArgKind::Array { dtype, writable }),
                    Seen::Array {
                        dtype: d,
                        writable: w,
                        len,
                    },
                ) if dtype == *d && writable == *w => {
                    let bytes = len * d.size_bytes();
                    if *w {
                        let mut b = a.bytes_mut(i)?;
                        if b.len() != bytes {
                            return Err(fail(format!(
                                "argument {i}: {} bytes, expected {bytes}",
                                b.len()
                            )));
                        }
                        b.fill(MARK);
                    } else {
                        let b = a.bytes(i)?;
                        if b.len() != bytes {
                            return Err(fail(format!(
                                "argument {i}: {} bytes, expected {bytes}",
                                b.len()
                            )));
                        }
                        std::hint::black_box(b.iter().fold(0u8, |x, y| x ^ y));
                    }
                }
                (got, _) => {
                    return Err(fail(format!(
                        "argument {i}: got {got:?}, expected {want:?}"
                    )));
                }
            }
        }
        Ok(())
    })
}

fn launch(u: &mut Unstructured<'_>, params: Option<Vec<ParamKind>>) -> Result<()> {
    let ctx = ctx();
    let n = u.int_in_range(0..=8)?;
    let mut fuzz_args = Vec::with_capacity(n);
    for _ in 0..n {
        fuzz_args.push(FuzzArg::arbitrary(u)?);
    }
    // The arrays, then the arguments borrowing them.
    let mut arrays: Vec<AnyArray> = Vec::new();
    let mut slots = Vec::new(); // per argument: None (scalar) or Some(array index)
    let mut inputs = Vec::new();
    for a in &fuzz_args {
        let slot = match *a {
            FuzzArg::Scalar(..) => None,
            FuzzArg::In(d, len) | FuzzArg::Out(d, len) => {
                arrays.push(AnyArray::zeros(ctx, d, len).expect("a small array"));
                if matches!(a, FuzzArg::In(..)) {
                    inputs.push(arrays.len() - 1);
                }
                Some(arrays.len() - 1)
            }
            FuzzArg::SameAsIn(i) if !inputs.is_empty() => Some(inputs[i % inputs.len()]),
            FuzzArg::SameAsIn(_) => {
                arrays.push(AnyArray::zeros(ctx, DType::U8, 1).expect("a small array"));
                inputs.push(arrays.len() - 1);
                Some(arrays.len() - 1)
            }
        };
        slots.push(slot);
    }
    let mut seen = Vec::with_capacity(n);
    for (a, slot) in fuzz_args.iter().zip(&slots) {
        seen.push(match (a, slot) {
            (FuzzArg::Scalar(d, bits), _) => {
                Seen::Scalar(Scalar::from_bytes(*d, &bits[..d.size_bytes()]).expect("sized bytes"))
            }
            (_, Some(i)) => Seen::Array {
                dtype: arrays[*i].dtype(),
                writable: matches!(a, FuzzArg::Out(..)),
                len: arrays[*i].len(),
            },
            (_, None) => unreachable!("arrays have a slot"),
        });
    }
    let expect_ok = fits(params.as_deref(), &seen);
    let kernel = kernel(params, Arc::new(seen.clone()));
    // Outputs are borrowed mutably, inputs shared: split the arrays.
    let mut outs: Vec<Option<&mut AnyArray>> = Vec::new();
    let mut ins: Vec<Option<&AnyArray>> = Vec::new();
    for (i, arr) in arrays.iter_mut().enumerate() {
        let written = fuzz_args
            .iter()
            .zip(&slots)
            .any(|(a, s)| matches!(a, FuzzArg::Out(..)) && *s == Some(i));
        if written {
            outs.push(Some(arr));
            ins.push(None);
        } else {
            outs.push(None);
            ins.push(Some(&*arr));
        }
    }
    let mut args = Vec::with_capacity(n);
    for (a, slot) in fuzz_args.iter().zip(&slots) {
        args.push(match (a, slot) {
            (FuzzArg::Scalar(..), _) => match seen[args.len()] {
                Seen::Scalar(s) => Arg::Scalar(s),
                Seen::Array { .. } => unreachable!(),
            },
            (FuzzArg::Out(..), Some(i)) => outs[*i].take().expect("written once").as_arg_mut(),
            (_, Some(i)) => ins[*i].expect("an input").as_arg(),
            (_, None) => unreachable!(),
        });
    }
    let grid = Grid::new(
        (u.int_in_range(1..=4)?, 1, 1),
        (u.int_in_range(1..=64)?, 1, 1),
    );
    match ctx.launch(&kernel, grid, args) {
        Ok(()) => assert!(
            expect_ok,
            "a launch that does not fit was accepted: {seen:?}"
        ),
        Err(e) => {
            assert!(!expect_ok, "a fitting launch was refused: {e}; {seen:?}");
            assert!(
                matches!(e, Error::KernelArgs { ref kernel, .. } if kernel == NAME),
                "{e:?}"
            );
        }
    }
    ctx.sync()
        .expect("the CPU implementation saw what was passed");
    if expect_ok {
        for (a, slot) in fuzz_args.iter().zip(&slots) {
            if let (FuzzArg::Out(..), Some(i)) = (a, slot) {
                let mut host = vec![0u8; arrays[*i].size_bytes()];
                arrays[*i].download_bytes(&mut host).expect("download");
                assert!(host.iter().all(|&b| b == MARK), "an output was not written");
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let (src, rest) = match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let source = String::from_utf8_lossy(src);
    let decls = parse_kernels(&source);
    for d in &decls {
        let mut chars = d.name.chars();
        assert!(
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "not an identifier: {:?}",
            d.name
        );
        assert!(
            source.contains(&d.name),
            "a name not in the source: {:?}",
            d.name
        );
    }
    let mut u = Unstructured::new(rest);
    let launches = u.int_in_range(0..=3u8).unwrap_or(0);
    for _ in 0..launches {
        let params = if !decls.is_empty() && u.arbitrary().unwrap_or(true) {
            let i = u.choose_index(decls.len()).unwrap_or(0);
            decls[i].params.clone()
        } else {
            match u.arbitrary::<Option<()>>() {
                Ok(Some(())) => {
                    let n = u.int_in_range(0..=8).unwrap_or(0);
                    (0..n)
                        .map(|_| param(&mut u))
                        .collect::<Result<Vec<_>>>()
                        .ok()
                }
                _ => None,
            }
        };
        if launch(&mut u, params).is_err() {
            break;
        }
    }
});
