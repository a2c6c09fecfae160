//! What only the vulkan backend has: the fallback chain's reasons for
//! passing it over (no loader, no adapter, a software adapter), adapters
//! named by `vulkan:N`, and kernels in WGSL and SPIR-V, read when attached,
//! checked against their bindings and launched. The cross-backend tests
//! run on vulkan through `on_every_backend!`; these need an adapter too,
//! except the ones that take the loader or the drivers away in a child
//! process.

#![cfg(feature = "vulkan")]

mod common;

use common::{assert_same, random_len, random_vec, vulkan_ctx};
use unigpu::kernel::ParamKind;
use unigpu::{Backend, Config, Context, DType, Error, Grid, Kernel, Outcome};

const CHILD_MARKER: &str = "vulkan-child-checks-ran";

/// Re-runs test `name` in a child process with `env` set, and requires
/// that the child ran its checks and passed.
fn in_child(name: &str, env: &[(&str, &str)]) {
    // No CUDA in the child either (the probe's test override), so the
    // chain reaches vulkan on a GPU machine too.
    let mut all = vec![
        ("UNIGPU_TEST_VULKAN_CHILD", "1"),
        (
            "UNIGPU_TEST_CUDA_DRIVER_LIB",
            "/nonexistent/unigpu-test/libcuda.so.1",
        ),
    ];
    all.extend_from_slice(env);
    unigpu_test_support::child::rerun(name, &all).assert_ran(&[CHILD_MARKER]);
}

fn is_child() -> bool {
    std::env::var_os("UNIGPU_TEST_VULKAN_CHILD").is_some()
}

/// The vulkan row of a default context's chain, which must be a skip.
fn vulkan_skip_reason() -> String {
    let ctx = Context::from_config(Config::default()).unwrap();
    let row = ctx
        .fallback_chain()
        .iter()
        .find(|a| a.backend == Backend::Vulkan)
        .expect("vulkan is in the chain");
    match &row.outcome {
        Outcome::Skipped(reason) => reason.clone(),
        other => panic!("vulkan should be skipped here, got {other:?}"),
    }
}

const MISSING_LOADER: &str = "/nonexistent/unigpu-test/libvulkan.so.1";

#[test]
fn without_a_vulkan_loader_the_chain_says_so() {
    if !is_child() {
        in_child(
            "without_a_vulkan_loader_the_chain_says_so",
            &[("UNIGPU_TEST_VULKAN_LOADER", MISSING_LOADER)],
        );
        return;
    }
    let reason = vulkan_skip_reason();
    assert!(
        reason.contains("no Vulkan loader") && reason.contains(MISSING_LOADER),
        "{reason}"
    );
    match Context::new(Backend::Vulkan, 0) {
        Err(Error::BackendUnavailable { backend, reason }) => {
            assert_eq!(backend, Backend::Vulkan);
            assert!(reason.contains("no Vulkan loader"), "{reason}");
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
    assert!(unigpu::list_devices(Backend::Vulkan).is_err());
    println!("{CHILD_MARKER}");
}

#[test]
fn without_a_vulkan_driver_the_chain_says_no_adapter() {
    if !is_child() {
        // The loader reads these to find drivers: none are found.
        let none = "/nonexistent/unigpu-test/icd.json";
        in_child(
            "without_a_vulkan_driver_the_chain_says_no_adapter",
            &[("VK_DRIVER_FILES", none), ("VK_ICD_FILENAMES", none)],
        );
        return;
    }
    let reason = vulkan_skip_reason();
    // A machine without the loader at all says that instead.
    assert!(
        reason.starts_with("the vulkan backend is unavailable: no adapter")
            || reason.contains("no Vulkan loader"),
        "{reason}"
    );
    println!("{CHILD_MARKER}");
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn adapters_are_named_vulkan_n_and_software_ones_are_skipped_by_default() {
    let ctx = vulkan_ctx();
    let devices = unigpu::list_devices(Backend::Vulkan).unwrap();
    assert!(!devices.is_empty());
    for (i, d) in devices.iter().enumerate() {
        assert_eq!((d.backend, d.ordinal), (Backend::Vulkan, i));
        let facts: Vec<&str> = d.details.iter().map(|(k, _)| k.as_str()).collect();
        for want in ["type", "driver", "max buffer", "max storage binding"] {
            assert!(facts.contains(&want), "{want} missing from {facts:?}");
        }
    }
    let n = devices.len();
    match Context::new(Backend::Vulkan, n + 2) {
        Err(Error::InvalidDevice {
            backend,
            asked,
            available,
        }) => assert_eq!((backend, asked, available), (Backend::Vulkan, n + 2, n)),
        other => panic!("adapter {} of {n}: {other:?}", n + 2),
    }
    // `device = "vulkan:0"` asks for the adapter, software or not.
    let named =
        Context::from_config(Config::parse("device = \"vulkan:0\"", "test").unwrap()).unwrap();
    assert_eq!(named.backend(), Backend::Vulkan);
    let software = |d: &unigpu::DeviceInfo| {
        d.details
            .iter()
            .any(|(k, v)| k == "type" && v.starts_with("software"))
    };
    // Adapter 0 is software only when every adapter is (hardware first).
    if software(&ctx.device_info().unwrap()) {
        assert!(devices.iter().all(software));
        if !common::cuda_usable() {
            let reason = vulkan_skip_reason();
            assert!(
                reason.contains("software adapter") && reason.contains(&devices[0].name),
                "{reason}"
            );
        }
    }
}

/// y[i] = a * x[i] + y[i] with the parameters read from the bindings.
const AXPBY: &str = r#"
@group(0) @binding(0) var<uniform> a: f32;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(64)
fn scaled_add(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[g.x] = a * x[g.x] + y[g.x]; }
}
"#;

fn axpby_params() -> Vec<ParamKind> {
    vec![
        ParamKind::Scalar(DType::F32),
        ParamKind::Pointer {
            dtype: Some(DType::F32),
            writable: false,
        },
        ParamKind::Pointer {
            dtype: Some(DType::F32),
            writable: true,
        },
        ParamKind::Scalar(DType::U32),
    ]
}

fn check_scaled_add(ctx: &Context, k: &Kernel) {
    for n in [1, 63, 64, 65, random_len(100_000)] {
        let (hx, hy) = (random_vec::<f32>(n), random_vec::<f32>(n));
        let a = random_vec::<f32>(1)[0];
        let x = ctx.upload(&hx).unwrap();
        let mut y = ctx.upload(&hy).unwrap();
        let grid = Grid::for_elems_with_block(n, 64);
        ctx.launch(k, grid, (a, &x, &mut y, n as u32)).unwrap();
        // A product and a sum, each rounded: what `a * x + y` means in WGSL
        // without contraction, and what every adapter here must give or
        // be within one fused rounding of.
        let got = y.download().unwrap();
        for i in 0..n {
            let (x, y) = (hx[i], hy[i]);
            let (two, one) = (a * x + y, a.mul_add(x, y));
            assert!(
                got[i] == two || got[i] == one,
                "element {i} of {n}: {} for {a} * {x} + {y}",
                got[i]
            );
        }
    }
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn wgsl_kernels_read_their_parameters_from_the_bindings() {
    let ctx = vulkan_ctx();
    let k = Kernel::from_wgsl("scaled_add", AXPBY).unwrap();
    assert_eq!(k.params().unwrap(), axpby_params().as_slice());
    assert!(k.has_shader() && !k.has_cpu_impl());
    check_scaled_add(&ctx, &k);
    // The same kernel launched again (the pipeline comes from the cache).
    check_scaled_add(&ctx, &k);
}

/// A launch's scalars come from a uniform buffer kept by its bytes
/// (backend/vulkan/uniforms.rs): launches back to back, without a sync
/// between them, whose scalars repeat, change and pass the number of
/// buffers kept (32) must each read their own. Each launch adds `a_j` to
/// its own slice of `y`, so a launch that read another launch's scalars
/// (its `a` or its offset) leaves a wrong or missing value.
#[test]
#[ignore = "needs a Vulkan adapter"]
fn launches_back_to_back_each_read_their_own_scalars() {
    const ADD_AT: &str = r#"
@group(0) @binding(0) var<uniform> a: f32;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> at: u32;
@group(0) @binding(3) var<uniform> n: u32;
@compute @workgroup_size(64)
fn add_at(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < n) { y[at + g.x] = y[at + g.x] + a; }
}
"#;
    let ctx = vulkan_ctx();
    let k = Kernel::from_wgsl("add_at", ADD_AT).unwrap();
    let width = 1 + random_len(200);
    // 40 distinct values of `a` (past the 32 kept), each launched in a
    // random order, most of them several times.
    let values = random_vec::<f32>(40);
    let picks: Vec<usize> = random_vec::<u32>(300)
        .into_iter()
        .map(|r| r as usize % values.len())
        .collect();
    let slots = picks.len();
    let mut y = ctx.zeros::<f32>(slots * width).unwrap();
    let mut want = vec![0f32; slots * width];
    for (j, &p) in picks.iter().enumerate() {
        let grid = Grid::for_elems_with_block(width, 64);
        let at = (j * width) as u32;
        ctx.launch(&k, grid, (values[p], &mut y, at, width as u32))
            .unwrap();
        for w in &mut want[j * width..(j + 1) * width] {
            *w += values[p];
        }
    }
    assert_same(&want, &y.download().unwrap());
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn spirv_kernels_run_like_wgsl_ones() {
    let ctx = vulkan_ctx();
    let module = naga::front::wgsl::parse_str(AXPBY).unwrap();
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap();
    let words = naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let k = Kernel::from_spirv("scaled_add", &bytes, None).unwrap();
    assert_eq!(k.params().unwrap(), axpby_params().as_slice());
    check_scaled_add(&ctx, &k);
    // Parameters given by the caller are checked against the bindings.
    let wrong = vec![ParamKind::Scalar(DType::F64); 4];
    assert!(matches!(
        Kernel::from_spirv("scaled_add", &bytes, Some(wrong)),
        Err(Error::KernelArgs { .. })
    ));
    let k = Kernel::from_spirv("scaled_add", &bytes, Some(axpby_params())).unwrap();
    check_scaled_add(&ctx, &k);
    // Not SPIR-V at all.
    assert!(matches!(
        Kernel::from_spirv("scaled_add", &bytes[4..], None),
        Err(Error::Compile { .. })
    ));
}

/// `bytes` of SPIR-V for the AXPBY shader (naga's writer).
fn axpby_spirv() -> Vec<u8> {
    let module = naga::front::wgsl::parse_str(AXPBY).unwrap();
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap();
    let words = naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap();
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn the_bindings_load_spirv_modules_on_vulkan() {
    use unigpu::binding::{ImageKind, load_module};
    let ctx = vulkan_ctx();
    let bytes = axpby_spirv();
    // Undeclared: the parameters are the shader's bindings.
    let module = load_module(&ctx, ImageKind::Spirv, &bytes, vec![]).unwrap();
    let k = module.kernel("scaled_add").unwrap();
    assert_eq!(k.params().unwrap(), axpby_params().as_slice());
    check_scaled_add(&ctx, &k);
    // Declared: checked against the bindings when loaded.
    let declared = vec![("scaled_add".to_string(), axpby_params())];
    let module = load_module(&ctx, ImageKind::Spirv, &bytes, declared).unwrap();
    assert_eq!(module.kernel_names(), vec!["scaled_add"]);
    check_scaled_add(&ctx, &module.kernel("scaled_add").unwrap());
    let wrong = vec![(
        "scaled_add".to_string(),
        vec![ParamKind::Scalar(DType::F64); 4],
    )];
    assert!(matches!(
        load_module(&ctx, ImageKind::Spirv, &bytes, wrong),
        Err(Error::KernelArgs { .. })
    ));
    // Not SPIR-V: a compile error naming the magic number.
    match load_module(&ctx, ImageKind::Spirv, &bytes[4..], vec![]) {
        Err(Error::Compile { log }) => assert!(log.contains("0x07230203"), "{log}"),
        other => panic!("{other:?}"),
    }
    match load_module(&ctx, ImageKind::Spirv, &bytes[..18], vec![]) {
        Err(Error::Compile { log }) => assert!(log.contains("18 bytes"), "{log}"),
        other => panic!("{other:?}"),
    }
    // CUDA code on vulkan: what to give the kernel instead.
    let ptx = include_str!("data/saxpy.ptx");
    match load_module(&ctx, ImageKind::Ptx, ptx.as_bytes(), vec![]) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Vulkan);
            assert!(what.contains("give the kernel a shader"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn spirv_off_vulkan_is_unsupported() {
    use unigpu::binding::{ImageKind, load_module};
    let ctx = common::cpu_ctx();
    match load_module(&ctx, ImageKind::Spirv, &axpby_spirv(), vec![]) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Cpu);
            assert!(what.contains("vulkan backend only"), "{what}");
            assert!(what.contains("CPU implementation"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    for kind in [
        ImageKind::Ptx,
        ImageKind::Cubin,
        ImageKind::Fatbin,
        ImageKind::Spirv,
    ] {
        assert_eq!(ImageKind::from_name(kind.name()), Some(kind));
        assert_eq!(
            ImageKind::from_name(&kind.name().to_uppercase()),
            Some(kind)
        );
    }
    assert_eq!(ImageKind::from_name("elf"), None);
}

#[test]
fn shaders_are_checked_when_attached() {
    // No adapter needed: shaders are read on the host.
    let broken = "@compute @workgroup_size(1)\nfn f() {\n  let x: f32 = undefined_name;\n}\n";
    match Kernel::from_wgsl("f", broken) {
        Err(Error::Compile { log }) => {
            assert!(log.contains("undefined_name"), "{log}");
            assert!(log.contains(":3:"), "the log names line 3: {log}");
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    match Kernel::from_wgsl("missing", AXPBY.replace("scaled_add", "other").as_str()) {
        // One compute entry point: taken whatever its name.
        Ok(k) => assert_eq!(k.name(), "missing"),
        other => panic!("{other:?}"),
    }
    let two = format!("{AXPBY}\n@compute @workgroup_size(1) fn second() {{}}\n");
    match Kernel::from_wgsl("third", &two) {
        Err(Error::Compile { log }) => assert!(
            log.contains("scaled_add") && log.contains("second"),
            "{log}"
        ),
        other => panic!("{other:?}"),
    }
    // Bindings with a gap, or in another group, are refused.
    let gap = AXPBY.replace("@binding(3)", "@binding(4)");
    assert!(matches!(
        Kernel::from_wgsl("scaled_add", &gap),
        Err(Error::Compile { .. })
    ));
    let group = AXPBY.replace("@group(0) @binding(3)", "@group(1) @binding(0)");
    assert!(matches!(
        Kernel::from_wgsl("scaled_add", &group),
        Err(Error::Compile { .. })
    ));
    // A shader that disagrees with the CUDA declaration is refused.
    let ctx = common::cpu_ctx();
    let cuda = ctx.compile(common::SAXPY).unwrap().kernel("saxpy").unwrap();
    let swapped = AXPBY
        .replace("var<uniform> n: u32", "var<uniform> n: i32")
        .replace("g.x < n", "i32(g.x) < n")
        .replace("scaled_add", "saxpy");
    match cuda.clone().with_wgsl(&swapped) {
        Err(Error::KernelArgs { kernel, message }) => {
            assert_eq!(kernel, "saxpy");
            assert!(
                message.contains("i32") && message.contains("wgsl"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // `float* y` is written; a shader that binds it read-only disagrees.
    let read_only_y = AXPBY.replace("read_write> y", "read> y").replace(
        "y[g.x] = a * x[g.x] + y[g.x];",
        "let unused = a * x[g.x] + y[g.x];",
    );
    assert!(matches!(
        cuda.with_wgsl(&read_only_y),
        Err(Error::KernelArgs { .. })
    ));
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn launches_are_checked_against_the_shader() {
    let ctx = vulkan_ctx();
    let k = Kernel::from_wgsl("scaled_add", AXPBY).unwrap();
    let n = 64;
    let x = ctx.upload(&random_vec::<f32>(n)).unwrap();
    let mut y = ctx.zeros::<f32>(n).unwrap();
    let g = Grid::for_elems_with_block(n, 64);
    let msg = |r: unigpu::Result<()>| match r {
        Err(Error::KernelArgs { kernel, message }) => {
            assert_eq!(kernel, "scaled_add");
            message
        }
        other => panic!("expected KernelArgs, got {other:?}"),
    };
    // The block must be the shader's workgroup size.
    let wrong_block = Grid::for_elems_with_block(n, 128);
    assert!(
        msg(ctx.launch(&k, wrong_block, (1.0f32, &x, &mut y, n as u32))).contains("workgroup_size")
    );
    // Too many workgroups for the adapter.
    let huge = Grid::new((u32::MAX, 1, 1), (64, 1, 1));
    assert!(msg(ctx.launch(&k, huge, (1.0f32, &x, &mut y, n as u32))).contains("per dimension"));
    // Dynamic shared memory has no WGSL counterpart.
    match ctx.launch(&k, g.with_shared_mem(256), (1.0f32, &x, &mut y, n as u32)) {
        Err(Error::Unsupported { backend, what }) => {
            assert_eq!(backend, Backend::Vulkan);
            assert!(what.contains("shared memory"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    // Nothing was written by the refused launches.
    assert_same(&vec![0.0; n], &y.download().unwrap());
    // A kernel without a shader says how to give it one.
    let cpu_only = Kernel::cpu_only("host_only", None, |_| Ok(()));
    match ctx.launch(&cpu_only, g, ()) {
        Err(Error::Unsupported { what, .. }) => assert!(what.contains("with_wgsl"), "{what}"),
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs a Vulkan adapter"]
fn f16_bf16_and_64_bit_arrays_move_and_fill_bit_for_bit() {
    // Element types the ops compute on in f32 (f16, bf16) and the ones
    // that only move (integers of 8 and 64 bits) keep every bit through
    // upload, fill, copy and download, at odd lengths that leave half a
    // word of padding.
    let ctx = vulkan_ctx();
    for n in [1, 3, 257, 4099] {
        let h = random_vec::<unigpu::f16>(n);
        let a = ctx.upload(&h).unwrap();
        let mut b = ctx.zeros::<unigpu::f16>(n).unwrap();
        a.copy_to(&mut b).unwrap();
        assert_same(&h, &b.download().unwrap());
        let v = random_vec::<u8>(1)[0];
        let mut c = ctx.zeros::<u8>(n).unwrap();
        ctx.ops().fill(&mut c, v).unwrap();
        assert_same(&vec![v; n], &c.download().unwrap());
        let w = random_vec::<i64>(1)[0];
        let mut d = ctx.zeros::<i64>(n).unwrap();
        ctx.ops().fill(&mut d, w).unwrap();
        assert_same(&vec![w; n], &d.download().unwrap());
    }
}

/// The staging slot the next test sets, in KiB (the default is 16 MiB:
/// this exercises the same code on small arrays).
const SLOT_KIB: usize = 1024;

#[test]
#[ignore = "needs a Vulkan adapter"]
fn transfers_of_several_staging_slots_keep_every_byte() {
    // Past one slot a transfer moves slot by slot with four slots in
    // flight (backend/vulkan/transfer.rs): five slots and a tail make an
    // upload fill its own earlier slots again. First with the stream held
    // back by a gate, so no slot comes back: the upload must still return
    // (it makes a slot after a short wait), having copied `host` out, since
    // `host` is overwritten before the gate opens.
    if !is_child() {
        let kib = SLOT_KIB.to_string();
        in_child(
            "transfers_of_several_staging_slots_keep_every_byte",
            &[("UNIGPU_VULKAN_STAGING_SLOT_KIB", &kib)],
        );
        return;
    }
    let _parked = common::park_lock();
    let ctx = vulkan_ctx();
    let s = ctx.create_stream().unwrap();
    let slot_words = (SLOT_KIB << 10) / 4;
    let n = 5 * slot_words + 1 + random_len(slot_words - 2);
    let want = random_vec::<u32>(n);
    let mut host = want.clone();
    let mut a = ctx.zeros::<u32>(n).unwrap();
    let gate = common::Gate::close(&s);
    s.upload(&host, &mut a).unwrap();
    host.iter_mut().for_each(|x| *x = !*x);
    gate.open();
    let mut back = host;
    s.download_into(&a, &mut back).unwrap();
    s.sync().unwrap();
    gate.assert_opened_by_the_test();
    assert_same(&want, &back);
    // Then with nothing held back the slots come back within the transfer.
    let again: Vec<u32> = want.iter().map(|x| x.rotate_left(7)).collect();
    a.upload_from(&again).unwrap();
    assert_same(&again, &a.download().unwrap());
    // And bytes that end inside a word in a slot of their own.
    let bytes = random_vec::<u8>(2 * (SLOT_KIB << 10) + 1 + random_len(4096));
    let b = ctx.upload(&bytes).unwrap();
    assert_same(&bytes, &b.download().unwrap());
    println!("{CHILD_MARKER}");
}
