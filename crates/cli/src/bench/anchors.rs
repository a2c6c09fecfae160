//! The anchors beside our figures: which anchor each figure is compared
//! with ([`ANCHORS`]), and where their values come from (`--anchors`
//! files, `--numpy`, or our own figures of the same run).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context as _;
use unigpu::Backend;

use super::figure::{Anchor, Figure, Measure};

/// Which machine's anchor it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// floor.cu, torch_cupy_baseline.py, torch_ops.py: the cuda and torch backends.
    Gpu,
    /// numpy_ops.py: the CPU backend.
    Cpu,
    /// Another of our own figures from the same run.
    Any,
}

impl Side {
    fn applies(self, backend: Backend) -> bool {
        match self {
            Side::Gpu => matches!(backend, Backend::Cuda | Backend::Torch),
            Side::Cpu => backend == Backend::Cpu,
            Side::Any => true,
        }
    }
}

/// Our figure's key, the anchor's key, the anchor's label, its machine.
/// The one table of which anchor each figure is compared with (the same
/// pairs as bench/runners/ratios.py). A figure may have several anchors (one row
/// each); a figure with none here shows no anchor.
#[rustfmt::skip]
pub const ANCHORS: &[(&str, &str, &str, Side)] = &[
    // launch.rs
    ("unigpu_empty_launch_submit_us", "raw_inprocess_launch_submit_us", "raw cuLaunchKernel, same process, alternating rounds", Side::Gpu),
    ("unigpu_empty_launch_submit_us", "raw_driver_launch_submit_us", "raw cuLaunchKernel (floor.cu)", Side::Gpu),
    ("unigpu_empty_launch_submit_us", "raw_runtime_launch_submit_us", "raw runtime launch (floor.cu)", Side::Gpu),
    ("unigpu_empty_launch_submit_us", "cupy_empty_launch_submit_us", "CuPy empty kernel", Side::Gpu),
    ("unigpu_empty_launch_submit_us", "torch_small_op_submit_us", "torch small op", Side::Gpu),
    ("unigpu_launch_sync_roundtrip_us_median", "raw_launch_sync_roundtrip_us_median", "raw launch + sync (floor.cu)", Side::Gpu),
    // compile.rs
    ("unigpu_compile_cached_ms_median", "cupy_compile_cached_ms_median", "CuPy cached compile", Side::Gpu),
    ("unigpu_compile_new_source_ms_median", "cupy_nvrtc_compile_load_ms_median", "CuPy new-source compile + load", Side::Gpu),
    ("disk_compile_first_ms", "unigpu_compile_first_ms", "our cold first compile", Side::Any),
    // The issue-26 goal: a macro kernel's first launch in a new process, as
    // fast as a hand-written source's (both from the disk cache): the same
    // kernel, the processes alternating.
    ("disk_macro_first_launch_ms", "disk_macro_anchor_first_launch_ms", "the same kernel as a hand-written CUDA source, first compile + launch in a new process (disk cache), alternating", Side::Any),
    // transfer.rs (pageable host memory on both sides; torch's and CuPy's
    // from bench/anchors/transfer_anchors.py, torch's 1/64/256 MiB uploads
    // also from torch_cupy_baseline.py)
    ("unigpu_h2d_pageable_1MiB_GBps", "torch_h2d_pageable_1MiB_GBps", "torch pageable copy_", Side::Gpu),
    ("unigpu_h2d_pageable_16MiB_GBps", "torch_h2d_pageable_16MiB_GBps", "torch pageable copy_", Side::Gpu),
    ("unigpu_h2d_pageable_64MiB_GBps", "torch_h2d_pageable_64MiB_GBps", "torch pageable copy_", Side::Gpu),
    ("unigpu_h2d_pageable_256MiB_GBps", "torch_h2d_pageable_256MiB_GBps", "torch pageable copy_", Side::Gpu),
    ("unigpu_h2d_pageable_1MiB_GBps", "cupy_h2d_pageable_1MiB_GBps", "CuPy set() from numpy", Side::Gpu),
    ("unigpu_h2d_pageable_16MiB_GBps", "cupy_h2d_pageable_16MiB_GBps", "CuPy set() from numpy", Side::Gpu),
    ("unigpu_h2d_pageable_64MiB_GBps", "cupy_h2d_pageable_64MiB_GBps", "CuPy set() from numpy", Side::Gpu),
    ("unigpu_h2d_pageable_256MiB_GBps", "cupy_h2d_pageable_256MiB_GBps", "CuPy set() from numpy", Side::Gpu),
    ("unigpu_d2h_pageable_1MiB_GBps", "torch_d2h_pageable_1MiB_GBps", "torch pageable copy_ to host", Side::Gpu),
    ("unigpu_d2h_pageable_16MiB_GBps", "torch_d2h_pageable_16MiB_GBps", "torch pageable copy_ to host", Side::Gpu),
    ("unigpu_d2h_pageable_64MiB_GBps", "torch_d2h_pageable_64MiB_GBps", "torch pageable copy_ to host", Side::Gpu),
    ("unigpu_d2h_pageable_256MiB_GBps", "torch_d2h_pageable_256MiB_GBps", "torch pageable copy_ to host", Side::Gpu),
    ("unigpu_d2h_new_vec_1MiB_GBps", "torch_d2h_cpu_1MiB_GBps", "torch .cpu()", Side::Gpu),
    ("unigpu_d2h_new_vec_16MiB_GBps", "torch_d2h_cpu_16MiB_GBps", "torch .cpu()", Side::Gpu),
    ("unigpu_d2h_new_vec_64MiB_GBps", "torch_d2h_cpu_64MiB_GBps", "torch .cpu()", Side::Gpu),
    ("unigpu_d2h_new_vec_256MiB_GBps", "torch_d2h_cpu_256MiB_GBps", "torch .cpu()", Side::Gpu),
    ("unigpu_d2h_new_vec_1MiB_GBps", "cupy_d2h_asnumpy_1MiB_GBps", "cupy.asnumpy", Side::Gpu),
    ("unigpu_d2h_new_vec_16MiB_GBps", "cupy_d2h_asnumpy_16MiB_GBps", "cupy.asnumpy", Side::Gpu),
    ("unigpu_d2h_new_vec_64MiB_GBps", "cupy_d2h_asnumpy_64MiB_GBps", "cupy.asnumpy", Side::Gpu),
    ("unigpu_d2h_new_vec_256MiB_GBps", "cupy_d2h_asnumpy_256MiB_GBps", "cupy.asnumpy", Side::Gpu),
    // The goals: staged pageable copies against the pinned DMA rate.
    ("unigpu_h2d_pageable_64MiB_GBps", "torch_h2d_pinned_64MiB_GBps", "pinned DMA rate (torch pinned copy_)", Side::Gpu),
    ("unigpu_h2d_pageable_256MiB_GBps", "torch_h2d_pinned_256MiB_GBps", "pinned DMA rate (torch pinned copy_)", Side::Gpu),
    ("unigpu_d2h_pageable_64MiB_GBps", "torch_d2h_pinned_64MiB_GBps", "pinned DMA rate (torch pinned copy_)", Side::Gpu),
    ("unigpu_d2h_new_vec_64MiB_GBps", "torch_d2h_pinned_64MiB_GBps", "pinned DMA rate (torch pinned copy_)", Side::Gpu),
    // axpy.rs, matmul.rs
    ("unigpu_axpy_f32_GBps", "torch_axpy_f32_GBps", "torch y.add_(x, alpha=2)", Side::Gpu),
    ("unigpu_matmul_f32_TFLOPs", "torch_matmul_f32_TFLOPs", "torch matmul", Side::Gpu),
    ("unigpu_matmul_bf16_TFLOPs", "torch_matmul_bf16_TFLOPs", "torch matmul", Side::Gpu),
    ("unigpu_bmm_f32_TFLOPs", "torch_bmm_f32_TFLOPs", "torch.bmm", Side::Gpu),
    ("unigpu_bmm_bf16_TFLOPs", "torch_bmm_bf16_TFLOPs", "torch.bmm", Side::Gpu),
    // A transposed operand read in place: as fast as the plain product.
    ("unigpu_mm_at_b_f32_TFLOPs", "unigpu_mm_plain_f32_TFLOPs", "plain mm a·b, alternating rounds", Side::Any),
    // kernels.rs: #[unigpu::kernel] kernels beside the built-in op or the
    // same algorithm hand-written, timed in alternating rounds in one case.
    ("unigpu_kernel_saxpy_f32_GBps", "unigpu_kernel_axpy_f32_GBps", "built-in axpy, alternating rounds", Side::Any),
    ("unigpu_kernel_sum_f32_ms", "unigpu_kernel_builtin_sum_f32_ms", "built-in sum, alternating rounds", Side::Any),
    ("unigpu_kernel_matmul_f32_TFLOPs", "unigpu_hand_tiled_matmul_f32_TFLOPs", "same algorithm hand-written (CUDA C++ / WGSL)", Side::Any),
    ("unigpu_kernel_matmul_f32_TFLOPs", "unigpu_hand_tiled_matmul_nofma_f32_TFLOPs", "same, CUDA C++ with --fmad=false", Side::Gpu),
    // ops_cpu.rs
    ("unigpu_cpu_relu_4Mi_ms", "numpy_cpu_relu_4Mi_ms", "numpy maximum(x, 0)", Side::Cpu),
    ("unigpu_cpu_add_4Mi_ms", "numpy_cpu_add_4Mi_ms", "numpy add", Side::Cpu),
    ("unigpu_cpu_sigmoid_4Mi_ms", "numpy_cpu_sigmoid_4Mi_ms", "numpy 4 in-place ufuncs", Side::Cpu),
    ("unigpu_cpu_sum_4Mi_ms", "numpy_cpu_sum_4Mi_ms", "numpy sum", Side::Cpu),
    ("unigpu_cpu_max_4Mi_ms", "numpy_cpu_max_4Mi_ms", "numpy max", Side::Cpu),
    ("unigpu_cpu_dot_4Mi_ms", "numpy_cpu_dot_4Mi_ms", "numpy dot", Side::Cpu),
    ("unigpu_cpu_matmul_512_ms", "numpy_cpu_matmul_512_ms", "numpy matmul (OpenBLAS)", Side::Cpu),
    ("unigpu_cpu_matmul_1024_ms", "numpy_cpu_matmul_1024_ms", "numpy matmul (OpenBLAS)", Side::Cpu),
    // Figures being added with their features (issue 12): these rows are
    // ready for the case that measures them under this key.
    ("unigpu_alloc_free_1MiB_us_median", "torch_alloc_free_1MiB_us_median", "torch caching allocator", Side::Gpu),
    ("unigpu_alloc_free_1MiB_us_median", "raw_malloc_async_free_1MiB_us_median", "raw cuMemAllocAsync/Free (floor.cu)", Side::Gpu),
    ("unigpu_event_record_us_median", "raw_event_record_us_median", "raw cuEventRecord (floor.cu)", Side::Gpu),
    ("unigpu_event_record_us_median", "torch_event_record_us_median", "torch Event.record", Side::Gpu),
    ("unigpu_h2d_pinned_64MiB_GBps", "torch_h2d_pinned_64MiB_GBps", "torch pinned copy_", Side::Gpu),
    ("unigpu_d2h_pinned_64MiB_GBps", "torch_d2h_pinned_64MiB_GBps", "torch pinned copy_", Side::Gpu),
    ("unigpu_h2d_pinned_256MiB_GBps", "torch_h2d_pinned_256MiB_GBps", "torch pinned copy_", Side::Gpu),
    ("unigpu_d2h_pinned_256MiB_GBps", "torch_d2h_pinned_256MiB_GBps", "torch pinned copy_", Side::Gpu),
    ("unigpu_graph_per_kernel_us", "raw_graph_per_kernel_us", "raw CUDA graph replay (floor.cu)", Side::Gpu),
    ("unigpu_graph_per_kernel_us", "torch_graph_per_kernel_us", "torch CUDA graph replay", Side::Gpu),
    ("unigpu_pipe_speedup", "torch_pipe_speedup", "torch 3-stream pipeline", Side::Gpu),
    // vulkan.rs: the vulkan backend beside the run's own backend (cuda on
    // the GPU machine, the CPU backend with lavapipe), same process.
    ("unigpu_vulkan_axpy_f32_GBps", "unigpu_axpy_f32_GBps", "this run's backend, axpy", Side::Any),
    ("unigpu_vulkan_matmul_f32_TFLOPs", "unigpu_matmul_f32_TFLOPs", "this run's backend, matmul (cuBLAS on cuda)", Side::Any),
    ("unigpu_vulkan_dispatch_submit_us", "unigpu_empty_launch_submit_us", "this run's backend, empty launch", Side::Any),
    ("unigpu_vulkan_dispatch_throughput_us", "unigpu_empty_launch_throughput_us", "this run's backend, empty launch", Side::Any),
    ("unigpu_vulkan_h2d_1MiB_GBps", "unigpu_h2d_pageable_1MiB_GBps", "this run's backend, pageable upload", Side::Any),
    ("unigpu_vulkan_d2h_1MiB_GBps", "unigpu_d2h_pageable_1MiB_GBps", "this run's backend, pageable download", Side::Any),
    ("unigpu_vulkan_h2d_16MiB_GBps", "unigpu_h2d_pageable_16MiB_GBps", "this run's backend, pageable upload", Side::Any),
    ("unigpu_vulkan_d2h_16MiB_GBps", "unigpu_d2h_pageable_16MiB_GBps", "this run's backend, pageable download", Side::Any),
    ("unigpu_vulkan_h2d_64MiB_GBps", "unigpu_h2d_pageable_64MiB_GBps", "this run's backend, pageable upload", Side::Any),
    ("unigpu_vulkan_d2h_64MiB_GBps", "unigpu_d2h_pageable_64MiB_GBps", "this run's backend, pageable download", Side::Any),
    ("unigpu_vulkan_h2d_256MiB_GBps", "unigpu_h2d_pageable_256MiB_GBps", "this run's backend, pageable upload", Side::Any),
    ("unigpu_vulkan_d2h_256MiB_GBps", "unigpu_d2h_pageable_256MiB_GBps", "this run's backend, pageable download", Side::Any),
];

/// numpy's side of the CPU ops, run by `--numpy` (`python -` reads it from stdin).
const NUMPY_OPS_PY: &str = include_str!("../../../../bench/anchors/numpy_ops.py");

/// Anchor values gathered for this run, and where they came from.
#[derive(Debug, Default)]
pub struct Values {
    values: HashMap<String, f64>,
    /// One line per source for the report's heading, e.g. "numpy 2.4.6 …".
    pub sources: Vec<String>,
}

impl Values {
    /// Reads `key value` lines; lines that are not two fields with a
    /// numeric value (comments, device names, versions) are passed over.
    pub fn read_file(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the anchors file {}", path.display()))?;
        let n = self.read_lines(&text);
        self.sources
            .push(format!("{}: {n} numeric `key value` lines", path.display()));
        Ok(())
    }

    /// Adds every numeric `key value` line of `text`; returns how many.
    pub fn read_lines(&mut self, text: &str) -> usize {
        let mut n = 0;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            if let (Some(key), Some(value), None) = (fields.next(), fields.next(), fields.next())
                && !key.starts_with('#')
                && let Ok(v) = value.parse::<f64>()
            {
                self.values.insert(key.to_string(), v);
                n += 1;
            }
        }
        n
    }

    /// A line for the heading about an anchor that was not measured.
    pub fn note(&mut self, line: String) {
        self.sources.push(line);
    }

    /// Runs numpy_ops.py with `python`. If Python or numpy is missing the
    /// numpy anchors stay "not measured" and the heading says why.
    pub fn run_numpy(&mut self, python: &Path, reps: usize) {
        match run_script(python, NUMPY_OPS_PY, reps) {
            Ok(stdout) => {
                let n = self.read_lines(&stdout);
                let version = stdout
                    .lines()
                    .find_map(|l| l.strip_prefix("numpy_version "))
                    .unwrap_or("(version not printed)");
                self.sources.push(format!(
                    "numpy {version}: bench/anchors/numpy_ops.py run by {} after our cases, {reps} reps, {n} figures",
                    python.display()
                ));
            }
            Err(why) => self.sources.push(format!("numpy: not measured ({why})")),
        }
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        self.values.get(key).copied()
    }
}

/// `python -` with `script` on stdin; its stdout, or why it failed.
fn run_script(python: &Path, script: &str, reps: usize) -> Result<String, String> {
    let mut child = Command::new(python)
        .arg("-")
        .env("UNIGPU_BENCH_REPS", reps.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| format!("writing the script to {}: {e}", python.display()))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for {}: {e}", python.display()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return Err(format!(
            "{} exited with {}: {last}",
            python.display(),
            out.status
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Our measures as report rows: one per anchor of [`ANCHORS`] that applies
/// to `backend` (its value from `values`, else from our own figures, else
/// "not measured"), or one row without an anchor.
/// Families of figures paired with an anchor by name, not one row each:
/// a key `<ours><rest>` is compared with `<anchor><rest>` (array_ops.rs's
/// ops, each beside the same op from torch or numpy).
pub const FAMILIES: &[(&str, &str, &str, Side)] = &[
    (
        "unigpu_op_",
        "torch_op_",
        "torch, same op and size (torch_ops.py)",
        Side::Gpu,
    ),
    (
        "unigpu_cpu_op_",
        "numpy_cpu_op_",
        "numpy, same op and size (numpy_ops.py)",
        Side::Cpu,
    ),
];

/// The anchors of our figure `key` on `backend`: its [`ANCHORS`] rows, or
/// else its [`FAMILIES`] one: `(anchor key, label)`.
fn anchors_of(key: &str, backend: Backend) -> Vec<(String, &'static str)> {
    let rows: Vec<(String, &str)> = ANCHORS
        .iter()
        .filter(|(k, _, _, side)| *k == key && side.applies(backend))
        .map(|&(_, anchor, label, _)| (anchor.to_string(), label))
        .collect();
    if !rows.is_empty() {
        return rows;
    }
    FAMILIES
        .iter()
        .filter(|(_, _, _, side)| side.applies(backend))
        .filter_map(|&(ours, anchor, label, _)| {
            key.strip_prefix(ours)
                .map(|rest| (format!("{anchor}{rest}"), label))
        })
        .take(1)
        .collect()
}

pub fn attach(measures: &[Measure], backend: Backend, values: &Values) -> Vec<Figure> {
    let ours: HashMap<&str, f64> = measures.iter().map(|m| (m.key.as_str(), m.value)).collect();
    let mut figures = Vec::new();
    for m in measures {
        let row = |anchor| Figure {
            key: m.key.clone(),
            name: m.name.clone(),
            group: m.group.into(),
            unit: m.unit.into(),
            value: m.value,
            better: m.better,
            anchor,
        };
        let before = figures.len();
        for (key, label) in anchors_of(&m.key, backend) {
            let value = ours.get(key.as_str()).copied().or_else(|| values.get(&key));
            figures.push(row(Some(Anchor {
                key,
                label: label.into(),
                value,
            })));
        }
        if figures.len() == before {
            figures.push(row(None));
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::super::figure::Better;
    use super::*;

    fn measure(key: &str, value: f64) -> Measure {
        Measure {
            key: key.into(),
            name: key.into(),
            group: "g",
            unit: "ms",
            value,
            better: Better::Lower,
        }
    }

    #[test]
    fn anchor_lines_skip_comments_text_and_odd_lines() {
        let mut v = Values::default();
        let n = v.read_lines(
            "# a comment 1\nnumpy_cpu_relu_4Mi_ms 1.5\nnumpy_version 2.4.6\ndevice NVIDIA H200\nx 1 2\n",
        );
        assert_eq!(n, 1);
        assert_eq!(v.get("numpy_cpu_relu_4Mi_ms"), Some(1.5));
        assert_eq!(v.get("numpy_version"), None);
    }

    #[test]
    fn anchors_follow_the_backend_and_say_not_measured() {
        let mut v = Values::default();
        v.read_lines("numpy_cpu_relu_4Mi_ms 2.0\nraw_driver_launch_submit_us 3.0\n");
        let ms = [
            measure("unigpu_cpu_relu_4Mi_ms", 1.0),
            measure("unigpu_cpu_sum_4Mi_ms", 1.0),
            measure("unigpu_empty_launch_submit_us", 3.3),
        ];
        let cpu = attach(&ms, Backend::Cpu, &v);
        assert_eq!(cpu.len(), 3);
        assert_eq!(cpu[0].ratio(), Some(2.0));
        let sum = cpu[1].anchor.as_ref().expect("sum has a numpy anchor");
        assert_eq!(
            (sum.key.as_str(), sum.value),
            ("numpy_cpu_sum_4Mi_ms", None)
        );
        // The GPU anchors are not the CPU backend's.
        assert_eq!(cpu[2].anchor, None);

        let gpu = attach(&ms[2..], Backend::Cuda, &v);
        assert_eq!(gpu.len(), 5, "launch submit has five GPU anchors");
        let values: Vec<Option<f64>> = gpu
            .iter()
            .map(|f| f.anchor.as_ref().and_then(|a| a.value))
            .collect();
        // Only floor.cu's raw driver launch was given; the in-process one,
        // the runtime launch, CuPy and torch say "not measured".
        assert_eq!(values, [None, Some(3.0), None, None, None]);
    }

    #[test]
    fn op_families_pair_by_name_on_their_backend() {
        let mut v = Values::default();
        v.read_lines("torch_op_exp_f32_GBps 2000\nnumpy_cpu_op_exp_ms 4.0\n");
        let gpu = attach(
            &[measure("unigpu_op_exp_f32_GBps", 1800.0)],
            Backend::Cuda,
            &v,
        );
        let a = gpu[0].anchor.as_ref().expect("exp has torch's");
        assert_eq!(
            (a.key.as_str(), a.value),
            ("torch_op_exp_f32_GBps", Some(2000.0))
        );
        let cpu = attach(&[measure("unigpu_cpu_op_exp_ms", 2.0)], Backend::Cpu, &v);
        assert_eq!(cpu[0].ratio(), Some(2.0));
        // torch's anchors are not the CPU backend's, nor numpy's a GPU's.
        let off = attach(&[measure("unigpu_op_exp_f32_GBps", 1.0)], Backend::Cpu, &v);
        assert_eq!(off[0].anchor, None);
        let off = attach(&[measure("unigpu_cpu_op_exp_ms", 1.0)], Backend::Vulkan, &v);
        assert_eq!(off[0].anchor, None);
    }

    #[test]
    fn our_own_figures_can_anchor() {
        let ms = [
            measure("unigpu_compile_first_ms", 20.0),
            measure("disk_compile_first_ms", 5.0),
        ];
        let f = attach(&ms, Backend::Cuda, &Values::default());
        assert_eq!(f[1].ratio(), Some(4.0));
    }

    #[test]
    fn every_figure_has_one_row_per_anchor_pair_at_most_once() {
        let mut pairs: Vec<_> = ANCHORS.iter().map(|(a, b, _, _)| (*a, *b)).collect();
        let n = pairs.len();
        pairs.sort();
        pairs.dedup();
        assert_eq!(pairs.len(), n, "a pair is listed twice in ANCHORS");
    }
}
