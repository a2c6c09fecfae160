//! The config file and its environment overrides: every error names the
//! file (or variable), the key, the bad value and what is allowed.

mod common;

use std::io::Write;

use unigpu::config::{BackendChoice, Config, ConfigError, DeviceSpec};
use unigpu::{Backend, Context, DType, DeviceKind, Error};

fn parse(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, "unigpu.toml")
}

/// Every backend and every device kind the facade has (`ALL` lists every
/// variant by construction) can be named in a config, with the device its
/// backend drives, and each kind is driven by the backend named like it:
/// a new variant fails here until config parsing knows it.
#[test]
fn every_backend_and_device_kind_can_be_named() {
    for b in Backend::ALL {
        let kind = b.device_kind();
        let device = kind.device_name(0);
        let c = parse(&format!("backend = \"{b}\"\ndevice = \"{device}\"\n"))
            .unwrap_or_else(|e| panic!("backend {b} on device {device}: {e}"));
        assert_eq!(c.backend, BackendChoice::Only(b));
        assert_eq!(c.device, Some(DeviceSpec { kind, ordinal: 0 }));
        assert_eq!(b.name().parse::<Backend>(), Ok(b));
    }
    for kind in DeviceKind::ALL {
        assert_eq!(kind.name().parse::<DeviceKind>(), Ok(kind));
        assert_eq!(Backend::named_for(kind).device_kind(), kind, "{kind}");
        let allowed = parse("device = \"nowhere\"").unwrap_err().to_string();
        assert!(allowed.contains(&format!("\"{kind}\"")), "{allowed}");
    }
}

#[test]
fn every_key_parses() {
    let c = parse("backend = \"cuda\"\ndevice = \"cuda:1\"\ndtype = \"bf16\"\n").unwrap();
    assert_eq!(c.backend, BackendChoice::Only(Backend::Cuda));
    assert_eq!(
        c.device,
        Some(DeviceSpec {
            kind: DeviceKind::Cuda,
            ordinal: 1
        })
    );
    assert_eq!(c.dtype, DType::BF16);
    assert_eq!(parse("").unwrap(), Config::default());
    assert_eq!(
        parse("backend = \"auto\"").unwrap().backend,
        BackendChoice::Auto
    );
    assert_eq!(
        parse("device = \"cuda\"").unwrap().device.unwrap().ordinal,
        0
    );
    assert_eq!(
        parse("device = \"cpu\"").unwrap().device.unwrap().kind,
        DeviceKind::Cpu
    );
    for d in DType::ALL {
        assert_eq!(parse(&format!("dtype = \"{d}\"")).unwrap().dtype, d);
    }
}

fn bad_value(text: &str) -> (String, &'static str, String, String) {
    match parse(text).unwrap_err() {
        ConfigError::BadValue {
            origin,
            key,
            value,
            allowed,
        } => (origin, key, value, allowed),
        other => panic!("expected BadValue for {text:?}, got {other:?}"),
    }
}

#[test]
fn a_bad_backend_names_file_line_key_value_and_choices() {
    let (origin, key, value, allowed) = bad_value("# comment\nbackend = \"gpu\"\n");
    assert_eq!(origin, "unigpu.toml:2:11");
    assert_eq!(key, "backend");
    assert_eq!(value, "gpu");
    assert!(allowed.contains("\"cuda\"") && allowed.contains("\"auto\""));
    let msg = parse("backend = \"gpu\"").unwrap_err().to_string();
    assert!(
        msg.contains("unigpu.toml:1:11") && msg.contains("`backend`") && msg.contains("\"gpu\""),
        "{msg}"
    );
}

#[test]
fn a_bad_device_is_reported() {
    for bad in ["gpu:0", "cuda:x", "cuda:-1", "cpu:1", "cuda:", ""] {
        let (_, key, value, allowed) = bad_value(&format!("device = \"{bad}\""));
        assert_eq!((key, value.as_str()), ("device", bad));
        assert!(allowed.contains("cuda:N"));
    }
}

#[test]
fn a_bad_dtype_is_reported() {
    let (origin, key, value, allowed) = bad_value("dtype = \"f128\"");
    assert_eq!(
        (origin.as_str(), key, value.as_str()),
        ("unigpu.toml:1:9", "dtype", "f128")
    );
    assert!(allowed.contains("bf16"));
}

#[test]
fn unknown_keys_and_bad_syntax_are_parse_errors() {
    // Wrong types: a_value_of_the_wrong_type_names_key_value_and_choices.
    for (text, needle) in [
        ("backnd = \"cuda\"", "backnd"),
        ("backend = \"cuda", "unigpu.toml:1"),
    ] {
        match parse(text) {
            Err(ConfigError::Parse { origin, message }) => {
                assert!(origin.starts_with("unigpu.toml"), "{origin}");
                let all = format!("{origin}: {message}");
                assert!(all.contains(needle), "{text:?} gave {all}");
            }
            other => panic!("{text:?}: expected a parse error, got {other:?}"),
        }
    }
}

#[test]
fn contradictory_settings_are_refused() {
    for text in [
        "backend = \"cpu\"\ndevice = \"cuda:1\"",
        "backend = \"cuda\"\ndevice = \"cpu\"",
        "backend = \"vulkan\"\ndevice = \"cuda:0\"",
        "backend = \"cuda\"\ndevice = \"vulkan:0\"",
        "backend = \"cpu\"\ndevice = \"vulkan\"",
    ] {
        assert!(
            matches!(parse(text), Err(ConfigError::Conflict { .. })),
            "{text}"
        );
    }
}

#[test]
fn environment_overrides_win_and_are_validated() {
    let mut c = parse("backend = \"cuda\"\ndevice = \"cuda:1\"").unwrap();
    c.apply_env_overrides(Some("cpu"), Some("cpu")).unwrap();
    assert_eq!(c.backend, BackendChoice::Only(Backend::Cpu));
    assert_eq!(c.device.unwrap().kind, DeviceKind::Cpu);

    let mut c = Config::default();
    match c.apply_env_overrides(Some("opencl"), None).unwrap_err() {
        ConfigError::BadValue {
            origin,
            key,
            value,
            allowed,
        } => {
            assert_eq!(origin, "environment variable UNIGPU_BACKEND");
            assert_eq!((key, value.as_str()), ("backend", "opencl"));
            assert!(allowed.contains("\"vulkan\""), "{allowed}");
        }
        other => panic!("{other:?}"),
    }
    let mut c = Config::default();
    c.apply_env_overrides(Some("vulkan"), Some("vulkan:2"))
        .unwrap();
    assert_eq!(c.backend, BackendChoice::Only(Backend::Vulkan));
    assert_eq!(
        c.device,
        Some(unigpu::DeviceSpec {
            kind: DeviceKind::Vulkan,
            ordinal: 2
        })
    );
    let mut c = Config::default();
    match c.apply_env_overrides(None, Some("cuda:one")).unwrap_err() {
        ConfigError::BadValue { origin, key, .. } => {
            assert_eq!(origin, "environment variable UNIGPU_DEVICE");
            assert_eq!(key, "device");
        }
        other => panic!("{other:?}"),
    }
    // Empty variables are ignored, like unset ones.
    let mut c = Config::default();
    c.apply_env_overrides(Some(""), Some("")).unwrap();
    assert_eq!(c, Config::default());
}

#[test]
fn environment_pairs_pick_the_unigpu_variables() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    // Other names are ignored; of a name given twice the last counts.
    let mut c = Config::default();
    c.apply_env([
        ("PATH", OsStr::new("/bin")),
        ("UNIGPU_BACKEND", OsStr::new("auto")),
        ("UNIGPU_BACKEND", OsStr::new("cpu")),
        ("UNIGPU_DEVICE", OsStr::new("cpu:0")),
    ])
    .unwrap();
    assert_eq!(c.backend, BackendChoice::Only(Backend::Cpu));
    assert_eq!(c.device.unwrap().kind, DeviceKind::Cpu);

    // A value that is not UTF-8 is an error naming the variable, not
    // silently the default.
    let mut c = Config::default();
    let bad = OsStr::from_bytes(b"cp\xffu");
    match c.apply_env([("UNIGPU_BACKEND", bad)]).unwrap_err() {
        ConfigError::BadValue {
            origin, key, value, ..
        } => {
            assert_eq!(origin, "environment variable UNIGPU_BACKEND");
            assert_eq!(key, "backend");
            assert_eq!(value, "cp\u{fffd}u");
        }
        other => panic!("{other:?}"),
    }
    let mut c = Config::default();
    match c.apply_env([("UNIGPU_DEVICE", bad)]).unwrap_err() {
        ConfigError::BadValue { origin, key, .. } => {
            assert_eq!(origin, "environment variable UNIGPU_DEVICE");
            assert_eq!(key, "device");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn files_are_read_and_errors_name_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unigpu.toml");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(b"backend = \"cpu\"\ndtype = \"f64\"\n")
        .unwrap();
    let ctx = Context::from_config_file(&path).unwrap();
    assert_eq!(ctx.backend(), Backend::Cpu);
    assert_eq!(ctx.dtype(), DType::F64);
    assert_eq!(ctx.config().source.as_deref(), Some(path.as_path()));

    std::fs::write(&path, "device = \"tpu:0\"\n").unwrap();
    let err = Context::from_config_file(&path).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Config(ConfigError::BadValue { .. })));
    assert!(msg.contains(&format!("{}:1:10", path.display())), "{msg}");
    assert!(msg.contains("\"tpu:0\""), "{msg}");

    let missing = dir.path().join("nope.toml");
    match Context::from_config_file(&missing).unwrap_err() {
        Error::Config(ConfigError::Read { path, .. }) => assert_eq!(path, missing),
        other => panic!("{other:?}"),
    }
}

#[test]
fn backend_cpu_in_a_config_selects_the_cpu_and_records_why() {
    let ctx = Context::from_config(parse("backend = \"cpu\"").unwrap()).unwrap();
    assert_eq!(ctx.backend(), Backend::Cpu);
    for attempt in &ctx.fallback_chain()[..2] {
        assert!(
            matches!(&attempt.outcome, unigpu::Outcome::Skipped(r) if r.contains("\"cpu\" was requested")),
            "{attempt}"
        );
    }
}

#[test]
fn a_named_backend_that_is_missing_is_an_error_not_a_fallback() {
    let result = Context::from_config(parse("backend = \"cuda\"").unwrap());
    if common::cuda_usable() {
        // A GPU machine: the named backend opens, and it is that backend,
        // not torch or the CPU, whatever else is built in.
        let ctx = result.expect("the probe found a usable GPU, so cuda must open");
        assert_eq!(ctx.backend(), Backend::Cuda);
        return;
    }
    match result {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, Backend::Cuda);
            assert!(!reason.is_empty());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn device_cuda_n_selects_that_gpu() {
    let devices = unigpu::list_devices(Backend::Cuda).expect("this test needs a CUDA GPU");
    assert!(!devices.is_empty(), "this test needs a CUDA GPU");
    for d in &devices {
        let ctx = Context::from_config(parse(&format!("device = \"cuda:{}\"", d.ordinal)).unwrap())
            .unwrap();
        // torch serves CUDA devices too, and comes first when it is built in.
        let backend = if cfg!(feature = "torch") {
            Backend::Torch
        } else {
            Backend::Cuda
        };
        assert_eq!((ctx.backend(), ctx.device_id()), (backend, d.ordinal));
        assert_eq!(ctx.device_info().unwrap().name, d.name);
        let host = common::random_vec::<f32>(common::random_len(1 << 16));
        common::assert_same(&host, &ctx.upload(&host).unwrap().download().unwrap());
    }
    let past_end = devices.len();
    match Context::from_config(parse(&format!("device = \"cuda:{past_end}\"")).unwrap()) {
        Err(Error::InvalidDevice {
            asked, available, ..
        }) => {
            assert_eq!((asked, available), (past_end, devices.len()))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn device_cuda_1_selects_the_second_gpu() {
    let n = unigpu::list_devices(Backend::Cuda).map_or(0, |d| d.len());
    assert!(n >= 2, "this test needs two CUDA GPUs, found {n}");
    let ctx = Context::from_config(parse("device = \"cuda:1\"").unwrap()).unwrap();
    assert_eq!(ctx.device_id(), 1);
    let host = common::random_vec::<f64>(common::random_len(1 << 16));
    let a = ctx.upload(&host).unwrap();
    // The same backend on device 0 (torch in a torch build, where the
    // config's device picks torch first).
    let first = Context::new(ctx.backend(), 0).unwrap();
    let mut on_first = first.zeros::<f64>(host.len()).unwrap();
    // A copy between the two devices goes GPU to GPU (peer access, or
    // staged through pinned memory: docs/multi-gpu.md) and lands whole on
    // device 0, leaving the source as it was.
    a.copy_to(&mut on_first).unwrap();
    common::assert_same(&host, &on_first.download().unwrap());
    common::assert_same(&host, &a.download().unwrap());
}

#[test]
fn a_value_of_the_wrong_type_names_key_value_and_choices() {
    for (text, key, found) in [
        ("backend = 3", "backend", "integer 3"),
        ("\n\ndevice = true", "device", "boolean true"),
        ("dtype = [\"f32\"]", "dtype", "array [\"f32\"]"),
        ("backend = 1.5", "backend", "float 1.5"),
        ("[backend]\nx = 1", "backend", "table { x = 1 }"),
    ] {
        let err = parse(text).unwrap_err();
        match &err {
            ConfigError::WrongType {
                origin,
                key: k,
                found: f,
                allowed,
            } => {
                assert_eq!((*k, f.as_str()), (key, found), "{text}");
                // The line the key is on.
                let line = text[..text.find(key).unwrap()].matches('\n').count() + 1;
                assert!(
                    origin.starts_with(&format!("unigpu.toml:{line}:")),
                    "{origin}"
                );
                assert!(allowed.contains('"'), "{allowed}");
            }
            other => panic!("expected WrongType for {text:?}, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("`{key}`")) && msg.contains(found) && msg.contains("allowed"),
            "{msg}"
        );
    }
}

#[test]
fn an_unknown_key_names_it_and_the_known_ones() {
    let msg = parse("backnd = \"cpu\"").unwrap_err().to_string();
    assert!(
        msg.contains("unigpu.toml:1:1")
            && msg.contains("backnd")
            && ["backend", "device", "dtype"]
                .iter()
                .all(|k| msg.contains(k)),
        "{msg}"
    );
}
