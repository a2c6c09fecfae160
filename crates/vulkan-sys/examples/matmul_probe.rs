//! What holds the vulkan backend's f32 matmul below cuBLAS: the
//! 128×128 vec4 tile kernel of the built-in op (unigpu's
//! backend/vulkan/shaders/matmul.rs) in several schedules and forms,
//! compiled with wgpu's runtime checks on (some also with loop bounding
//! or every check off), timed through wgpu alone
//! on the first Vulkan adapter (set `VK_DRIVER_FILES` to pick a driver).
//! Every result is checked on the host (three rows, every column). A
//! measurement probe, not an example of the API: it uses wgpu directly
//! (docs/vulkan.md, "Matmul").
//!
//! `cargo run --release -p unigpu-vulkan-sys --example matmul_probe [N]
//! [--unigpu-features] [--wgsl FILE]`: with `--unigpu-features` the device
//! is opened with the vulkan backend's features, and the kernel also runs
//! with its sizes as immediates; `--wgsl FILE` (which needs them) adds
//! the built-in's WGSL as unigpu generated it, for timing it here
//! (`--only-wgsl`: that alone). `--dump DIR` writes each variant's WGSL
//! there.
//!
//! The schedules: `plain` (load a stage, barrier, compute, barrier: the
//! built-in's), `prefetch` (the next stage's global loads issued into
//! registers before this stage's arithmetic, stored after it), `mid` (the
//! same, issued halfway through the stage), and `double` (prefetch into a
//! second pair of tiles, one barrier a stage). `xN`: N of a stage's 16
//! steps written out in the loop's body; `4x8`: a warp's invocations as
//! a 4×8 block; `2-D`: the tiles as arrays of rows indexed by the step.

use std::time::Instant;

use wgpu::util::DeviceExt;

mod common;
use common::{block_on, first_adapter};

/// One kernel to time: its schedule, how many of a stage's 16 steps of k
/// one loop iteration writes out (`unroll`; the loads and stores of a
/// stage are written out whenever it is above 1), whether a warp's 32 invocations are a 4×8 block of the
/// 16×16 (`remap`) rather than two rows, and wgpu's runtime checks.
struct Variant {
    name: &'static str,
    schedule: Schedule,
    unroll: u32,
    remap: bool,
    two_d: bool,
    /// The sizes as immediates (push constants, as the built-in takes
    /// them) rather than a uniform buffer.
    imm: bool,
    /// The WGSL of `--wgsl FILE` instead (the built-in's, with its
    /// 48 bytes of immediates: unigpu's backend/vulkan/shaders/matmul.rs).
    file: bool,
    checks: wgpu::ShaderRuntimeChecks,
}

#[derive(Clone, Copy, PartialEq)]
enum Schedule {
    Plain,
    Prefetch,
    PrefetchMid,
    Double,
}

/// The kernel: workgroups of 16×16, each a 128×128 tile of `c` from
/// stages of 16 k; each invocation an 8×8 block (rows `4ty..` and
/// `64+4ty..`, columns `4tx..` and `64+4tx..` in vec4s). `a`'s stage is
/// stored transposed, rows padded to 132 floats.
fn wgsl(variant: &Variant) -> String {
    let schedule = variant.schedule;
    let lane = ["x", "y", "z", "w"];
    let mut decls = String::new();
    let mut inner = String::new();
    let mut store = String::new();
    for r in 0..8 {
        let (a, l) = (if r < 4 { "a0" } else { "a1" }, lane[r % 4]);
        for (j, b) in ["b0", "b1"].iter().enumerate() {
            decls.push_str(&format!("    var c{r}{j} = vec4<f32>(0.0);\n"));
            inner.push_str(&format!(
                "            c{r}{j} = fma(vec4<f32>({a}.{l}), {b}, c{r}{j});\n"
            ));
        }
        let row = if r < 4 {
            format!("ty * 4u + {r}u")
        } else {
            format!("64u + ty * 4u + {}u", r - 4)
        };
        store.push_str(&format!(
            "    put(row0 + {row}, col4 + tx, c{r}0);\n    put(row0 + {row}, col4 + 16u + tx, c{r}1);\n"
        ));
    }
    let buffers = if schedule == Schedule::Double { 2 } else { 1 };
    // The loads of one stage into registers, and their stores into the
    // tiles at offset `ao`/`bo` (vec4s).
    let load = "\x20           let idx = tid + e * 256u;\n\
                \x20           let r = idx / 4u;\n\
                \x20           let q = idx % 4u;\n\
                \x20           var v = vec4<f32>(0.0);\n\
                \x20           if (row0 + r < p.m && K0 + q < k4) { v = a[(row0 + r) * k4 + K0 + q]; }\n\
                \x20           ra[e] = v;\n\
                \x20           let kr = idx / 32u;\n\
                \x20           let cq = idx % 32u;\n\
                \x20           var u = vec4<f32>(0.0);\n\
                \x20           if (K0 * 4u + kr < p.k && col4 + cq < n4) { u = b[(K0 * 4u + kr) * n4 + col4 + cq]; }\n\
                \x20           rb[e] = u;\n";
    let put_tiles_2d = "\x20           let idx = tid + e * 256u;\n\
                        \x20           let r = idx / 4u;\n\
                        \x20           let q = idx % 4u;\n\
                        \x20           let v = ra[e];\n\
                        \x20           ta[q * 4u][r / 4u][r % 4u] = v.x;\n\
                        \x20           ta[q * 4u + 1u][r / 4u][r % 4u] = v.y;\n\
                        \x20           ta[q * 4u + 2u][r / 4u][r % 4u] = v.z;\n\
                        \x20           ta[q * 4u + 3u][r / 4u][r % 4u] = v.w;\n\
                        \x20           tb[idx / 32u][idx % 32u] = rb[e];\n";
    let put_tiles = if variant.two_d {
        put_tiles_2d
    } else {
        "\x20           let idx = tid + e * 256u;\n\
                     \x20           let r = idx / 4u;\n\
                     \x20           let q = idx % 4u;\n\
                     \x20           let v = ra[e];\n\
                     \x20           let at = AO + q * 132u + r / 4u;\n\
                     \x20           ta[at][r % 4u] = v.x;\n\
                     \x20           ta[at + 33u][r % 4u] = v.y;\n\
                     \x20           ta[at + 66u][r % 4u] = v.z;\n\
                     \x20           ta[at + 99u][r % 4u] = v.w;\n\
                     \x20           tb[BO + idx] = rb[e];\n"
    };
    // Stages' steps `from..to` of k: a loop whose body is `unroll`
    // steps written out.
    let steps = |from: u32, to: u32| {
        let step = |kk: &str| {
            format!(
                "            {{\n\
                 {reads}\
                 {inner}            }}\n",
                reads = if variant.two_d {
                    format!(
                        "\x20           let a0 = ta[{kk}][ty];\n\
                         \x20           let a1 = ta[{kk}][16u + ty];\n\
                         \x20           let b0 = tb[{kk}][tx];\n\
                         \x20           let b1 = tb[{kk}][16u + tx];\n"
                    )
                } else {
                    format!(
                        "\x20           let a0 = ta[AO + ({kk}) * 33u + ty];\n\
                         \x20           let a1 = ta[AO + ({kk}) * 33u + 16u + ty];\n\
                         \x20           let b0 = tb[BO + ({kk}) * 32u + tx];\n\
                         \x20           let b1 = tb[BO + ({kk}) * 32u + 16u + tx];\n"
                    )
                }
            )
        };
        let u = variant.unroll;
        if u >= to - from {
            (from..to)
                .map(|kk| step(&format!("{kk}u")))
                .collect::<String>()
        } else {
            let body: String = (0..u).map(|i| step(&format!("kk + {i}u"))).collect();
            format!("        for (var kk = {from}u; kk < {to}u; kk += {u}u) {{\n{body}        }}\n")
        }
    };
    let compute = steps(0, 16);
    let halves = (steps(0, 8), steps(8, 16));
    // The two loads or stores of a stage, as a loop or written out.
    let twice = |body: &str| {
        if variant.unroll > 1 {
            format!(
                "        {{ let e = 0u;\n{body}        }}\n        {{ let e = 1u;\n{body}        }}\n"
            )
        } else {
            format!("        for (var e = 0u; e < 2u; e++) {{\n{body}        }}\n")
        }
    };
    let load = twice(load);
    let put_tiles = twice(put_tiles);
    let (load, put_tiles) = (load.as_str(), put_tiles.as_str());
    let at = |s: &str, k0: &str, ao: &str, bo: &str| {
        s.replace("K0", k0).replace("AO", ao).replace("BO", bo)
    };
    let body = match schedule {
        Schedule::Plain => format!(
            "    for (var k0 = 0u; k0 < k4; k0 += 4u) {{\n{}{}        workgroupBarrier();\n{}        workgroupBarrier();\n    }}\n",
            at(load, "k0", "0u", "0u"),
            at(put_tiles, "k0", "0u", "0u"),
            at(&compute, "k0", "0u", "0u"),
        ),
        Schedule::Prefetch => format!(
            "{}{}    workgroupBarrier();\n    for (var k0 = 0u; k0 < k4; k0 += 4u) {{\n        let nk = k0 + 4u;\n        if (nk < k4) {{\n{}        }}\n{}        workgroupBarrier();\n        if (nk < k4) {{\n{}        }}\n        workgroupBarrier();\n    }}\n",
            at(load, "0u", "0u", "0u"),
            at(put_tiles, "0u", "0u", "0u"),
            at(load, "nk", "0u", "0u"),
            at(&compute, "k0", "0u", "0u"),
            at(put_tiles, "nk", "0u", "0u"),
        ),
        Schedule::PrefetchMid => format!(
            "{}{}    workgroupBarrier();\n    for (var k0 = 0u; k0 < k4; k0 += 4u) {{\n        let nk = k0 + 4u;\n{}        if (nk < k4) {{\n{}        }}\n{}        workgroupBarrier();\n        if (nk < k4) {{\n{}        }}\n        workgroupBarrier();\n    }}\n",
            at(load, "0u", "0u", "0u"),
            at(put_tiles, "0u", "0u", "0u"),
            at(&halves.0, "k0", "0u", "0u"),
            at(load, "nk", "0u", "0u"),
            at(&halves.1, "k0", "0u", "0u"),
            at(put_tiles, "nk", "0u", "0u"),
        ),
        Schedule::Double => format!(
            "{}{}    workgroupBarrier();\n    var s = 0u;\n    for (var k0 = 0u; k0 < k4; k0 += 4u) {{\n        let nk = k0 + 4u;\n        let ca = s * 528u;\n        let cb = s * 512u;\n        let na = (1u - s) * 528u;\n        let nb = (1u - s) * 512u;\n        if (nk < k4) {{\n{}        }}\n{}        if (nk < k4) {{\n{}        }}\n        workgroupBarrier();\n        s = 1u - s;\n    }}\n",
            at(load, "0u", "0u", "0u"),
            at(put_tiles, "0u", "0u", "0u"),
            at(load, "nk", "0u", "0u"),
            at(&compute, "k0", "ca", "cb"),
            at(put_tiles, "nk", "na", "nb"),
        ),
    };
    format!(
        "struct P {{ m: u32, n: u32, k: u32, pad: u32 }}\n\
         @group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;\n\
         @group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;\n\
         @group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;\n\
         {params}\
         {tiles}\
         fn put(r: u32, col4: u32, v: vec4<f32>) {{ if (r < p.m && col4 < p.n / 4u) {{ c[r * (p.n / 4u) + col4] = v; }} }}\n\
         @compute @workgroup_size(16, 16)\n\
         fn main(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{\n\
         \x20   let tid = l.y * 16u + l.x;\n\
         {layout}\
         \x20   let row0 = w.y * 128u;\n\
         \x20   let col4 = w.x * 32u;\n\
         \x20   let k4 = p.k / 4u;\n\
         \x20   let n4 = p.n / 4u;\n\
         \x20   var ra: array<vec4<f32>, 2>;\n\
         \x20   var rb: array<vec4<f32>, 2>;\n\
         {decls}{body}{store}}}\n",
        params = if variant.imm {
            "var<immediate> p: P;\n"
        } else {
            "@group(0) @binding(3) var<uniform> p: P;\n"
        },
        layout = if variant.remap {
            "    let tx = (tid / 32u) % 2u * 8u + tid % 8u;\n    let ty = tid / 64u * 4u + tid % 32u / 8u;\n"
        } else {
            "    let tx = l.x;\n    let ty = l.y;\n"
        },
        tiles = if variant.two_d {
            "var<workgroup> ta: array<array<vec4<f32>, 33>, 16>;\nvar<workgroup> tb: array<array<vec4<f32>, 32>, 16>;\n".to_string()
        } else {
            format!(
                "var<workgroup> ta: array<vec4<f32>, {}>;\nvar<workgroup> tb: array<vec4<f32>, {}>;\n",
                528 * buffers,
                512 * buffers
            )
        },
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(4096);
    assert!(n.is_multiple_of(4), "N must be a multiple of 4");
    let adapter = first_adapter()?;
    println!("adapter: {}, n = {n}", adapter.get_info().name);
    let mut limits = wgpu::Limits::default().using_resolution(adapter.limits());
    limits.max_storage_buffer_binding_size = adapter.limits().max_storage_buffer_binding_size;
    limits.max_buffer_size = adapter.limits().max_buffer_size;
    limits.max_compute_workgroup_storage_size = adapter.limits().max_compute_workgroup_storage_size;
    // `--unigpu-features`: the features unigpu's vulkan backend opens a
    // device with (backend/vulkan/device.rs, `wanted`), which also let the
    // immediates variant run.
    let features = if std::env::args().any(|a| a == "--unigpu-features") {
        adapter.features()
            & (wgpu::Features::IMMEDIATES
                | wgpu::Features::SHADER_F16
                | wgpu::Features::SHADER_F64
                | wgpu::Features::SHADER_INT64
                | wgpu::Features::TIMESTAMP_QUERY
                | wgpu::Features::SUBGROUP
                | wgpu::Features::PASSTHROUGH_SHADERS)
    } else {
        wgpu::Features::empty()
    };
    if features.contains(wgpu::Features::IMMEDIATES) {
        limits.max_immediate_size = adapter.limits().max_immediate_size;
    }
    println!("features: {features:?}");
    let (device, queue) = block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: features,
        required_limits: limits,
        ..Default::default()
    }))?;

    let ha: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let hb: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104729) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let storage = |data: &[f32], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &data
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
            usage,
        })
    };
    let a = storage(&ha, wgpu::BufferUsages::STORAGE);
    let b = storage(&hb, wgpu::BufferUsages::STORAGE);
    let bytes = (n * n * 4) as u64;
    let c = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let dims: Vec<u8> = [n as u32, n as u32, n as u32, 0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let params = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &dims,
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let flop = 2.0 * (n as f64).powi(3);
    let tiles = n.div_ceil(128) as u32;
    let checked = wgpu::ShaderRuntimeChecks::checked();
    let no_loop_bounding = wgpu::ShaderRuntimeChecks {
        force_loop_bounding: false,
        ..checked
    };
    let v = |name, schedule, unroll, remap, checks| Variant {
        name,
        schedule,
        unroll,
        remap,
        two_d: false,
        imm: false,
        file: false,
        checks,
    };
    let two_d = |name, schedule, unroll, checks| Variant {
        two_d: true,
        ..v(name, schedule, unroll, true, checks)
    };
    use Schedule::{Double, Plain, Prefetch, PrefetchMid};
    let unchecked = wgpu::ShaderRuntimeChecks::unchecked();
    let variants = [
        v("plain, loops (the old built-in)", Plain, 1, false, checked),
        v(
            "plain, loops, no bounding",
            Plain,
            1,
            false,
            no_loop_bounding,
        ),
        v("plain, loops, unchecked", Plain, 1, false, unchecked),
        v(
            "prefetch, loops, no bounding",
            Prefetch,
            1,
            false,
            no_loop_bounding,
        ),
        v("plain x16", Plain, 16, false, checked),
        v("plain x16, 4x8 warps", Plain, 16, true, checked),
        v(
            "plain x16, 4x8 warps, unchecked",
            Plain,
            16,
            true,
            unchecked,
        ),
        two_d("plain x16, 4x8, 2-D (the built-in)", Plain, 16, checked),
        two_d("plain x16, 4x8, 2-D, unchecked", Plain, 16, unchecked),
        two_d("plain x8, 4x8 warps, 2-D tiles", Plain, 8, checked),
        two_d("prefetch x16, 4x8 warps, 2-D tiles", Prefetch, 16, checked),
        v("mid x8, 4x8 warps", PrefetchMid, 8, true, checked),
        v("double x4, 4x8 warps", Double, 4, true, checked),
        Variant {
            imm: true,
            ..two_d("the built-in, sizes as immediates", Plain, 16, checked)
        },
        Variant {
            imm: true,
            file: true,
            ..v("--wgsl FILE", Plain, 16, true, checked)
        },
    ];
    let only_file = std::env::args().any(|a| a == "--only-wgsl");
    let dump = std::env::args().skip_while(|a| a != "--dump").nth(1);
    let file = std::env::args()
        .skip_while(|a| a != "--wgsl")
        .nth(1)
        .map(std::fs::read_to_string)
        .transpose()?;
    // The built-in's immediates for one n×n×n product: m, n, k, the first
    // batch, then a's offset, batch stride, leading dimension, transposed,
    // then b's.
    let builtin_imm: Vec<u8> = [n, n, n, 0, 0, 0, n, 0, 0, 0, n, 0]
        .iter()
        .flat_map(|&v| (v as u32).to_le_bytes())
        .collect();
    for variant in &variants {
        if variant.imm && !features.contains(wgpu::Features::IMMEDIATES) {
            continue;
        }
        if only_file && !variant.file {
            continue;
        }
        let source = match (variant.file, &file) {
            (false, _) => wgsl(variant),
            (true, Some(text)) => text.clone(),
            (true, None) => continue,
        };
        let imm: &[u8] = if variant.file { &builtin_imm } else { &dims };
        if let Some(dir) = &dump {
            std::fs::write(
                format!(
                    "{dir}/{}.wgsl",
                    variant.name.replace([' ', ',', '(', ')'], "_")
                ),
                &source,
            )?;
        }
        let runtime_checks = variant.checks;
        {
            // SAFETY: the kernel's every global read and write is guarded
            // by m, n and k, which the uniform holds and the buffers above
            // match (n×n f32 each); its workgroup indices stay inside the
            // tiles by construction (at most 16·33 + 32 + 16 < 528 and
            // 16·32 + 32 < 512 a buffer); its loops end (constant counts
            // and a k-loop stepping by 4 to k/4).
            let module = unsafe {
                device.create_shader_module_trusted(
                    wgpu::ShaderModuleDescriptor {
                        label: None,
                        source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
                    },
                    runtime_checks,
                )
            };
            // With immediates the layout is made here (wgpu derives none
            // with them): the three arrays and the immediates.
            let storage_entry = |binding, read_only| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage { read_only },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            };
            let imm_layout = variant.imm.then(|| {
                let group = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: None,
                    entries: &[
                        storage_entry(0, true),
                        storage_entry(1, true),
                        storage_entry(2, false),
                    ],
                });
                let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&group)],
                    immediate_size: imm.len() as u32,
                });
                (group, layout)
            });
            let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: None,
                layout: imm_layout.as_ref().map(|(_, l)| l),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
            let group = match &imm_layout {
                Some((group, _)) => device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: group,
                    entries: &[entry(0, &a), entry(1, &b), entry(2, &c)],
                }),
                None => device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: None,
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &[entry(0, &a), entry(1, &b), entry(2, &c), entry(3, &params)],
                }),
            };
            let run = |reps: usize| {
                let mut encoder = device.create_command_encoder(&Default::default());
                {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&pipeline);
                    pass.set_bind_group(0, &group, &[]);
                    if variant.imm {
                        pass.set_immediates(0, imm);
                    }
                    for _ in 0..reps {
                        pass.dispatch_workgroups(tiles, tiles, 1);
                    }
                }
                queue.submit([encoder.finish()]);
                device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            };
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.clear_buffer(&c, 0, None);
            queue.submit([encoder.finish()]);
            run(2);
            let mut best = f64::INFINITY;
            for _ in 0..5 {
                let start = Instant::now();
                run(10);
                best = best.min(start.elapsed().as_secs_f64() / 10.0);
            }
            // Check: rows 0, n/2 and n-1, every column, against f64 sums.
            let mut encoder = device.create_command_encoder(&Default::default());
            encoder.copy_buffer_to_buffer(&c, 0, &readback, 0, bytes);
            queue.submit([encoder.finish()]);
            readback
                .slice(..)
                .map_async(wgpu::MapMode::Read, |r| r.unwrap());
            device.poll(wgpu::PollType::wait_indefinitely())?;
            let worst = {
                let view = readback.slice(..).get_mapped_range()?;
                let mut worst = 0f64;
                for i in [0, n / 2, n - 1] {
                    for j in 0..n {
                        let want: f64 = (0..n)
                            .map(|q| f64::from(ha[i * n + q]) * f64::from(hb[q * n + j]))
                            .sum();
                        let at = (i * n + j) * 4;
                        let got = f32::from_le_bytes(view[at..at + 4].try_into().unwrap());
                        worst = worst.max((f64::from(got) - want).abs());
                    }
                }
                worst
            };
            readback.unmap();
            let ok = worst <= 1e-4 * (n as f64).sqrt();
            println!(
                "matmul n={n} {:<34} {:>8.4} ms {:>7.2} TFLOP/s  max err {worst:.2e} {}",
                variant.name,
                best * 1e3,
                flop / best / 1e12,
                if ok { "ok" } else { "WRONG" }
            );
        }
    }
    Ok(())
}

fn entry(binding: u32, buffer: &wgpu::Buffer) -> wgpu::BindGroupEntry<'_> {
    wgpu::BindGroupEntry {
        binding,
        resource: buffer.as_entire_binding(),
    }
}
