//! The `unigpu` binary, run as a user would run it.

use std::process::{Command, Output};

fn unigpu(args: &[&str], env: &[(&str, &str)]) -> Output {
    // UNIGPU_BIN: the binary's path where tests run away from this build
    // tree (the GPU machine, through `cargo xtask gpu-pack`).
    let bin = std::env::var("UNIGPU_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_unigpu").into());
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env_remove("UNIGPU_BACKEND")
        .env_remove("UNIGPU_DEVICE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running unigpu")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn info_prints_the_chain_the_choice_and_the_devices() {
    let out = unigpu(&["info"], &[]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    for needle in [
        "CUDA probe:",
        "fallback chain:",
        "torch",
        "chosen backend:",
        "devices:",
        "cpu:0",
    ] {
        assert!(t.contains(needle), "missing {needle:?} in:\n{t}");
    }
    assert!(t.contains("memory") && t.contains("GiB total"), "{t}");
}

#[test]
fn info_without_libcuda_explains_why_cuda_was_skipped() {
    let missing = "/nonexistent/unigpu-cli-test/libcuda.so.1";
    let out = unigpu(&["info"], &[("UNIGPU_TEST_CUDA_DRIVER_LIB", missing)]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    let cuda_line = t
        .lines()
        .find(|l| l.trim_start().starts_with("cuda ") && l.contains("skipped"))
        .unwrap_or_else(|| panic!("no skipped cuda line in:\n{t}"));
    assert!(cuda_line.contains(missing), "{cuda_line}");
    // The chain goes on to the next backend that opens: vulkan on a machine
    // with a hardware Vulkan driver (the GPU machine's NVIDIA ICD), else cpu.
    let vulkan_line = t
        .lines()
        .find(|l| l.trim_start().starts_with("vulkan "))
        .unwrap_or_else(|| panic!("no vulkan line in:\n{t}"));
    let next = if vulkan_line.contains("chosen") {
        "vulkan"
    } else {
        assert!(vulkan_line.contains("skipped"), "{vulkan_line}");
        "cpu"
    };
    assert!(t.contains(&format!("chosen backend: {next}")), "{t}");
}

#[test]
fn a_bad_environment_value_is_a_clear_error() {
    let out = unigpu(&["info"], &[("UNIGPU_BACKEND", "gpu")]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(
        t.contains("UNIGPU_BACKEND") && t.contains("\"gpu\"") && t.contains("\"cuda\""),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}

#[test]
fn demo_runs_and_checks_its_result() {
    let out = unigpu(&["demo", "--n", "100003"], &[("UNIGPU_BACKEND", "cpu")]);
    let t = text(&out);
    assert!(out.status.success(), "{t}");
    assert!(t.contains("all 100003 elements match"), "{t}");
}

// `unigpu bench`: the structure of each output on the CPU backend, on the
// quickest cases (`--only`, `--reps`). Timings are never asserted.

fn bench(args: &[&str]) -> Output {
    let mut all = vec!["bench", "--backend", "cpu"];
    all.extend_from_slice(args);
    unigpu(&all, &[])
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", text(out));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not only JSON ({e}):\n{}", text(out)))
}

fn temp_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("unigpu-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn bench_cpu_ops_json_lists_each_figure_with_its_numpy_anchor() {
    let out = unigpu(
        &[
            "bench",
            "--cpu-ops-only",
            "--only",
            "cpu_relu,cpu_sum",
            "--reps",
            "2",
            "--json",
            "-",
        ],
        &[("UNIGPU_BACKEND", "cpu")],
    );
    let j = json(&out);
    assert_eq!(j["backend"], "cpu");
    assert!(j["device"].as_str().is_some_and(|d| !d.is_empty()), "{j}");
    assert_eq!(j["date"].as_str().map(str::len), Some(10), "{j}");
    let figures = j["figures"].as_array().expect("figures");
    let keys: Vec<_> = figures.iter().map(|f| f["key"].as_str()).collect();
    assert_eq!(
        keys,
        [
            Some("unigpu_cpu_relu_4Mi_ms"),
            Some("unigpu_cpu_sum_4Mi_ms")
        ]
    );
    for f in figures {
        assert_eq!(f["group"], "ops_cpu");
        assert_eq!(f["unit"], "ms");
        assert_eq!(f["better"], "lower");
        assert!(f["value"].as_f64().is_some_and(|v| v > 0.0), "{f}");
        // No --numpy, no --anchors: the anchor is named but not measured.
        let anchor = &f["anchor"];
        assert!(
            anchor["key"]
                .as_str()
                .is_some_and(|k| k.starts_with("numpy_cpu_")),
            "{f}"
        );
        assert!(anchor["value"].is_null() && f["ratio"].is_null(), "{f}");
    }
    assert_eq!(j["skipped"], serde_json::json!([]));
}

#[test]
fn bench_markdown_names_the_backend_and_the_skipped_gpu_cases() {
    let out = bench(&["--only", "transfer,compile,compile_disk", "--reps", "1"]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let heading = t.lines().next().unwrap_or_default();
    assert!(
        heading.starts_with("## unigpu bench, ") && heading.contains(": cpu backend, "),
        "{t}"
    );
    assert!(t.contains("Anchors: none given"), "{t}");
    assert!(
        t.contains("\n| group | figure | unigpu | anchor | anchor value | ratio |\n|---|---|---|---|---|---|\n"),
        "{t}"
    );
    for row in [
        "| transfer | upload 64 MiB from pageable memory (GB/s) | ",
        "| transfer | download 64 MiB into pageable memory (GB/s) | ",
        "| compile | compile (case) | skipped: measures a CUDA backend (cuda or torch); this run is on cpu |",
        "| compile | compile_disk (case) | skipped: ",
    ] {
        assert!(t.contains(row), "no {row:?} in:\n{t}");
    }
    // Every row has the table's six cells.
    for line in t.lines().filter(|l| l.starts_with('|')) {
        assert_eq!(line.matches('|').count(), 7, "{line}");
    }
}

#[test]
fn bench_lines_keep_the_key_value_format_for_the_scripts() {
    let out = bench(&[
        "--cpu-ops-only",
        "--only",
        "cpu_max",
        "--reps",
        "1",
        "--lines",
    ]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let lines: Vec<_> = t.lines().collect();
    assert_eq!(lines[0], "unigpu_backend cpu", "{t}");
    assert!(lines[1].starts_with("unigpu_device "), "{t}");
    let (key, value) = lines[2].split_once(' ').expect("key value");
    assert_eq!(key, "unigpu_cpu_max_4Mi_ms");
    assert!(value.parse::<f64>().is_ok(), "{t}");
    assert_eq!(lines.len(), 3, "{t}");
}

#[test]
fn bench_anchors_file_gives_ratios_and_a_plot_and_json_file() {
    let anchors = temp_path("anchors.txt");
    let plot = temp_path("bench.svg");
    let json_file = temp_path("bench.json");
    std::fs::write(
        &anchors,
        "# numpy's line, as numpy_ops.py prints it\nnumpy_cpu_max_4Mi_ms 1.25\nnumpy_version 2.4.6\n",
    )
    .expect("anchors file");
    let out = bench(&[
        "--cpu-ops-only",
        "--only",
        "cpu_max",
        "--reps",
        "1",
        "--anchors",
        anchors.to_str().expect("utf-8 path"),
        "--plot",
        plot.to_str().expect("utf-8 path"),
        "--json",
        json_file.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    let row = t
        .lines()
        .find(|l| l.starts_with("| ops_cpu | max 4 Mi f32 (ms) |"))
        .unwrap_or_else(|| panic!("no max row in:\n{t}"));
    assert!(
        row.contains("| numpy max | 1.250 | ") && row.ends_with("× |"),
        "{row}"
    );
    assert!(
        t.contains("anchors.txt: 1 numeric `key value` lines"),
        "{t}"
    );
    let svg = std::fs::read_to_string(&plot).expect("the plot was written");
    assert!(svg.contains("max 4 Mi f32 (ms) vs numpy max"), "{svg}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_file).expect("the JSON was written"))
            .expect("JSON");
    let f = &j["figures"][0];
    assert_eq!(f["anchor"]["value"], 1.25);
    let (ours, ratio) = (f["value"].as_f64(), f["ratio"].as_f64());
    assert!(
        ours.zip(ratio)
            .is_some_and(|(v, r)| (r - 1.25 / v).abs() < 1e-9 * r),
        "{f}"
    );
    let _ = std::fs::remove_dir_all(anchors.parent().expect("temp dir"));
}

#[test]
fn bench_numpy_without_python_says_not_measured() {
    let out = bench(&[
        "--cpu-ops-only",
        "--only",
        "cpu_max",
        "--reps",
        "1",
        "--numpy",
        "--python",
        "/nonexistent/unigpu-cli-test/python3",
        "--json",
        "-",
    ]);
    let j = json(&out);
    let sources = j["anchor_sources"].to_string();
    assert!(
        sources.contains("numpy: not measured (cannot run /nonexistent/unigpu-cli-test/python3"),
        "{sources}"
    );
    assert!(j["figures"][0]["anchor"]["value"].is_null(), "{j}");
}

#[test]
fn bench_unknown_case_or_backend_is_a_clear_error() {
    let out = bench(&["--only", "warp_drive"]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(t.contains("\"warp_drive\"") && t.contains("--list"), "{t}");
    let out = unigpu(&["bench", "--backend", "gpu"], &[]);
    let t = text(&out);
    assert!(!out.status.success());
    assert!(t.contains("\"gpu\"") && t.contains("\"cuda\""), "{t}");
    assert!(!t.contains("panicked"), "{t}");
}

#[test]
fn bench_list_names_every_case() {
    let out = unigpu(&["bench", "--list"], &[]);
    let t = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", text(&out));
    for case in [
        "launch",
        "compile_disk",
        "transfer",
        "matmul_bf16",
        "bmm_f32",
        "bmm_bf16",
        "mm_transposed_f32",
        "cpu_matmul_1024",
    ] {
        assert!(t.contains(&format!("| {case} |")), "no {case} in:\n{t}");
    }
}
