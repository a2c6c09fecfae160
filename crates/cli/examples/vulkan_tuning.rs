//! The tuning probe behind the vulkan backend's built-in axpy and matmul
//! shaders: candidate WGSL kernels, launched as user kernels, timed beside
//! the built-in op and the run's own backend in one process, every result
//! checked against the host. On the GPU machine:
//!
//!     vulkan_tuning            # sizes for a GPU
//!     vulkan_tuning --small    # sizes for lavapipe (a correctness run)
//!     vulkan_tuning --matmul   # the matmuls only
//!
//! Prints one line per candidate: size, ms per launch, GB/s or TFLOP/s.

use anyhow::{Context as _, ensure};
use unigpu::{Backend, Context, GpuArray, Grid, Kernel};

const REPS: usize = 20;

fn main() -> anyhow::Result<()> {
    let small = std::env::args().any(|a| a == "--small");
    let vk = Context::new(Backend::Vulkan, 0).context("no vulkan adapter")?;
    println!("vulkan adapter: {}", vk.device_info()?.name);
    let other = Context::default()?;
    println!(
        "beside: {} ({})",
        other.backend(),
        other.device_info()?.name
    );
    let sizes: &[usize] = if small {
        &[1 << 16, (1 << 16) + 3]
    } else {
        &[1 << 24, 1 << 26, 1 << 28]
    };
    let matmul_only = std::env::args().any(|a| a == "--matmul");
    for &n in sizes.iter().filter(|_| !matmul_only) {
        axpy(&vk, &other, n)?;
    }
    let sizes: &[usize] = if small { &[128, 256] } else { &[2048, 4096] };
    for &n in sizes {
        matmul(&vk, &other, n)?;
    }
    Ok(())
}

/// Milliseconds per call of `f`, from timed events on `ctx`'s stream.
fn time(ctx: &Context, mut f: impl FnMut() -> unigpu::Result<()>) -> anyhow::Result<f64> {
    f()?;
    ctx.synchronize()?;
    let s = ctx.default_stream();
    let start = s.record_timed()?;
    for _ in 0..REPS {
        f()?;
    }
    let end = s.record_timed()?;
    Ok(start.elapsed_ms(&end)? as f64 / REPS as f64)
}

/// As [`time`], with the stream held by a host function while the reps
/// are enqueued, so they reach the device as one submission: the gap
/// between this and [`time`] is what a submission costs.
fn time_gated(ctx: &Context, mut f: impl FnMut() -> unigpu::Result<()>) -> anyhow::Result<f64> {
    f()?;
    ctx.synchronize()?;
    let s = ctx.default_stream();
    s.host_fn(|| std::thread::sleep(std::time::Duration::from_millis(50)))?;
    let start = s.record_timed()?;
    for _ in 0..REPS {
        f()?;
    }
    let end = s.record_timed()?;
    Ok(start.elapsed_ms(&end)? as f64 / REPS as f64)
}

/// An axpy candidate: `vec4` loads 16 bytes of each array at a time, and
/// each invocation takes `per` units (elements or vec4s) a grid apart.
fn axpy_wgsl(vec4: bool, per: u32) -> String {
    let (ty, a) = if vec4 {
        ("vec4<f32>", "vec4<f32>(alpha)")
    } else {
        ("f32", "alpha")
    };
    format!(
        r#"
@group(0) @binding(0) var<uniform> alpha: f32;
@group(0) @binding(1) var<storage, read> x: array<{ty}>;
@group(0) @binding(2) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(3) var<uniform> n: u32;
@group(0) @binding(4) var<uniform> nx: u32;
@compute @workgroup_size(256)
fn axpy(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) w: vec3<u32>) {{
    let stride = w.x * w.y * 256u;
    let i = g.x + g.y * nx;
    for (var j = 0u; j < {per}u; j++) {{
        let k = i + j * stride;
        if (k < n) {{ y[k] = fma({a}, x[k], y[k]); }}
    }}
}}
"#
    )
}

/// A 2-D grid of 256-wide workgroups with at least `units` invocations,
/// and the invocations of one grid row.
fn grid_2d(units: usize) -> (Grid, u32) {
    let groups = units.div_ceil(256).max(1);
    let x = groups.min(32768);
    let y = groups.div_ceil(x);
    (
        Grid::new((x as u32, y as u32, 1), (256, 1, 1)),
        (x * 256) as u32,
    )
}

fn axpy(vk: &Context, other: &Context, n: usize) -> anyhow::Result<()> {
    let hx: Vec<f32> = (0..n).map(|i| ((i * 7) % 1000) as f32 * 1e-3).collect();
    let hy: Vec<f32> = (0..n).map(|i| ((i * 13) % 1000) as f32 * 1e-3).collect();
    let gb = 3.0 * 4.0 * n as f64 / 1e9;
    let report = |what: &str, ms: f64| {
        println!(
            "axpy n=2^{:.2} {what:<28} {ms:>9.4} ms {:>8.1} GB/s",
            (n as f64).log2(),
            gb / (ms * 1e-3)
        )
    };
    // The run's own backend, and the built-in vulkan op.
    for (name, ctx) in [("beside: built-in", other), ("vulkan: built-in", vk)] {
        let x = ctx.upload(&hx)?;
        let mut y = ctx.upload(&hy)?;
        let ops = ctx.ops();
        let ms = time(ctx, || ops.axpy(2.0, &x, &mut y))?;
        report(name, ms);
        let ms = time_gated(ctx, || ops.axpy(2.0, &x, &mut y))?;
        report(&format!("{name}, gated"), ms);
        check_axpy(&hx, &hy, &y.download()?, 2 * REPS + 2)?;
    }
    let candidates = [
        ("vulkan: scalar", false, 1),
        ("vulkan: scalar x4", false, 4),
        ("vulkan: vec4", true, 1),
        ("vulkan: vec4 x2", true, 2),
        ("vulkan: vec4 x4", true, 4),
    ];
    for (name, vec4, per) in candidates {
        let width = if vec4 { 4 } else { 1 };
        if !n.is_multiple_of(width) {
            continue;
        }
        let k = Kernel::from_wgsl("axpy", &axpy_wgsl(vec4, per))?;
        let x = vk.upload(&hx)?;
        let mut y = vk.upload(&hy)?;
        let units = n / width;
        let (grid, nx) = grid_2d(units.div_ceil(per as usize));
        let mut launch = || vk.launch(&k, grid, (2.0f32, &x, &mut y, units as u32, nx));
        let ms = time(vk, &mut launch)?;
        report(name, ms);
        let ms = time_gated(vk, &mut launch)?;
        report(&format!("{name}, gated"), ms);
        check_axpy(&hx, &hy, &y.download()?, 2 * REPS + 2)?;
    }
    Ok(())
}

/// `got` is `reps` axpys with alpha 2 of `x` into `y`, element by element.
fn check_axpy(x: &[f32], y: &[f32], got: &[f32], reps: usize) -> anyhow::Result<()> {
    for (i, ((x, y), g)) in x.iter().zip(y).zip(got).enumerate() {
        let mut want = *y;
        for _ in 0..reps {
            want = 2.0f32.mul_add(*x, want);
        }
        ensure!(
            (want - g).abs() <= 1e-5 * want.abs().max(1.0),
            "axpy[{i}] = {g}, the host says {want}"
        );
    }
    Ok(())
}

/// 128×128 tiles of `c`, 16 k-steps a stage; each invocation an 8×8 block
/// as rows `4ty..4ty+4` and `64+4ty..` by columns `4tx..4tx+4` and
/// `64+4tx..`, so its shared loads and `c` stores are vec4s. `a`'s tile is
/// stored transposed with rows padded to 132 floats, which keeps the
/// transposing stores to two-way bank conflicts.
fn matmul_vec4() -> String {
    let mut inner = String::new();
    let mut decl = String::new();
    let mut store = String::new();
    for r in 0..8 {
        for cj in 0..2 {
            decl.push_str(&format!("    var c{r}{cj} = vec4<f32>(0.0);\n"));
        }
    }
    inner.push_str("            let a0 = ta[kk * 33u + l.y];\n");
    inner.push_str("            let a1 = ta[kk * 33u + 16u + l.y];\n");
    inner.push_str("            let b0 = tb[kk * 32u + l.x];\n");
    inner.push_str("            let b1 = tb[kk * 32u + 16u + l.x];\n");
    let comp = ["x", "y", "z", "w"];
    for r in 0..8 {
        let (av, cmp) = (if r < 4 { "a0" } else { "a1" }, comp[r % 4]);
        for (cj, bv) in ["b0", "b1"].iter().enumerate() {
            inner.push_str(&format!(
                "            c{r}{cj} = fma(vec4<f32>({av}.{cmp}), {bv}, c{r}{cj});\n"
            ));
        }
    }
    for r in 0..8 {
        let row = if r < 4 {
            format!("l.y * 4u + {r}u")
        } else {
            format!("64u + l.y * 4u + {}u", r - 4)
        };
        store.push_str(&format!(
            "    {{ let row = row0 + {row};\n      if (row < m) {{\n        \
             if (col4 + l.x < n4) {{ c[row * n4 + col4 + l.x] = c{r}0; }}\n        \
             if (col4 + 16u + l.x < n4) {{ c[row * n4 + col4 + 16u + l.x] = c{r}1; }}\n      }} }}\n"
        ));
    }
    format!(
        r#"
@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> c: array<vec4<f32>>;
@group(0) @binding(3) var<uniform> m: u32;
@group(0) @binding(4) var<uniform> n: u32;
@group(0) @binding(5) var<uniform> k: u32;
var<workgroup> ta: array<vec4<f32>, 528>;
var<workgroup> tb: array<vec4<f32>, 512>;
@compute @workgroup_size(16, 16)
fn matmul(@builtin(local_invocation_id) l: vec3<u32>, @builtin(workgroup_id) w: vec3<u32>) {{
    let tid = l.y * 16u + l.x;
    let row0 = w.y * 128u;
    let col4 = w.x * 32u;
    let k4 = k / 4u;
    let n4 = n / 4u;
{decl}    for (var k0 = 0u; k0 < k4; k0 += 4u) {{
        for (var e = 0u; e < 2u; e++) {{
            let idx = tid + e * 256u;
            let r = idx / 4u;
            let q = idx % 4u;
            var v = vec4<f32>(0.0);
            if (row0 + r < m && k0 + q < k4) {{ v = a[(row0 + r) * k4 + k0 + q]; }}
            let at = q * 4u * 33u + r / 4u;
            ta[at][r % 4u] = v.x;
            ta[at + 33u][r % 4u] = v.y;
            ta[at + 66u][r % 4u] = v.z;
            ta[at + 99u][r % 4u] = v.w;
            let kr = idx / 32u;
            let cq = idx % 32u;
            var u = vec4<f32>(0.0);
            if (k0 * 4u + kr < k && col4 + cq < n4) {{ u = b[(k0 * 4u + kr) * n4 + col4 + cq]; }}
            tb[kr * 32u + cq] = u;
        }}
        workgroupBarrier();
        for (var kk = 0u; kk < 16u; kk++) {{
{inner}        }}
        workgroupBarrier();
    }}
{store}}}
"#
    )
}

fn matmul(vk: &Context, other: &Context, n: usize) -> anyhow::Result<()> {
    let ha: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let hb: Vec<f32> = (0..n * n)
        .map(|i| ((i * 104729) % 1000) as f32 * 1e-3 - 0.5)
        .collect();
    let flop = 2.0 * (n as f64).powi(3);
    let report = |what: &str, ms: f64| {
        println!(
            "matmul n={n} {what:<28} {ms:>9.4} ms {:>8.2} TFLOP/s",
            flop / (ms * 1e-3) / 1e12
        )
    };
    let check = |c: &GpuArray<f32>| -> anyhow::Result<()> {
        let got = c.download()?;
        // Rows 0, n/2 and n-1, every column.
        for i in [0, n / 2, n - 1] {
            for j in 0..n {
                let want: f64 = (0..n)
                    .map(|p| f64::from(ha[i * n + p]) * f64::from(hb[p * n + j]))
                    .sum();
                let g = f64::from(got[i * n + j]);
                ensure!(
                    (g - want).abs() <= 1e-4 * (n as f64).sqrt(),
                    "matmul c[{i}][{j}] = {g}, the host says {want}"
                );
            }
        }
        Ok(())
    };
    for (name, ctx) in [("beside: built-in", other), ("vulkan: built-in", vk)] {
        let a = ctx.upload(&ha)?;
        let b = ctx.upload(&hb)?;
        let mut c = ctx.zeros::<f32>(n * n)?;
        let ops = ctx.ops();
        let ms = time(ctx, || ops.matmul(&a, &b, &mut c, (n, n, n)))?;
        report(name, ms);
        check(&c)?;
        let ms = time_gated(ctx, || ops.matmul(&a, &b, &mut c, (n, n, n)))?;
        report(&format!("{name}, gated"), ms);
        check(&c)?;
    }
    let k = Kernel::from_wgsl("matmul", &matmul_vec4())?;
    let a = vk.upload(&ha)?;
    let b = vk.upload(&hb)?;
    let mut c = vk.zeros::<f32>(n * n)?;
    let tiles = n.div_ceil(128) as u32;
    let grid = Grid::new((tiles, tiles, 1), (16, 16, 1));
    let (m32, n32) = (n as u32, n as u32);
    let ms = time(vk, || vk.launch(&k, grid, (&a, &b, &mut c, m32, n32, n32)))?;
    report("vulkan: vec4 128x128x16", ms);
    check(&c)?;
    Ok(())
}
