"""Reads the `key value` lines of one run and prints unigpu's figures as
ratios to the anchors measured in the same run: the GPU anchors, or with
`--cpu` numpy's times beside the CPU backend's (bench/runners/run_cpu.sh)."""
import sys

cpu = sys.argv[1] == "--cpu"
vals, raw = {}, {}
for line in open(sys.argv[-1]):
    parts = line.split()
    if len(parts) == 2:
        raw[parts[0]] = parts[1]
        try:
            vals[parts[0]] = float(parts[1])
        except ValueError:
            vals[parts[0]] = parts[1]

rows = [
    ("empty launch submit (us), vs raw driver launch in the same process", "unigpu_empty_launch_submit_us", "raw_inprocess_launch_submit_us", "lower"),
    ("empty launch submit (us), vs raw driver floor", "unigpu_empty_launch_submit_us", "raw_driver_launch_submit_us", "lower"),
    ("empty launch submit (us), vs raw runtime <<<>>>", "unigpu_empty_launch_submit_us", "raw_runtime_launch_submit_us", "lower"),
    ("empty launch submit (us), vs CuPy", "unigpu_empty_launch_submit_us", "cupy_empty_launch_submit_us", "lower"),
    ("empty launch submit (us), vs torch small op", "unigpu_empty_launch_submit_us", "torch_small_op_submit_us", "lower"),
    ("launch+sync round trip (us), vs raw", "unigpu_launch_sync_roundtrip_us_median", "raw_launch_sync_roundtrip_us_median", "lower"),
    ("cached compile, same process (ms), vs CuPy cached", "unigpu_compile_cached_ms_median", "cupy_compile_cached_ms_median", "lower"),
    ("new-source compile+load (ms), vs CuPy new-source", "unigpu_compile_new_source_ms_median", "cupy_nvrtc_compile_load_ms_median", "lower"),
    ("new process, disk cache (ms), vs our cold compile", "disk_compile_first_ms", "unigpu_compile_first_ms", "lower"),
    ("axpy f32 2^26 (GB/s), vs torch add_", "unigpu_axpy_f32_GBps", "torch_axpy_f32_GBps", "higher"),
    ("matmul f32 4096 (TFLOP/s), vs torch", "unigpu_matmul_f32_TFLOPs", "torch_matmul_f32_TFLOPs", "higher"),
    ("matmul bf16 4096 (TFLOP/s), vs torch", "unigpu_matmul_bf16_TFLOPs", "torch_matmul_bf16_TFLOPs", "higher"),
    ("bmm f32 32x512^3 (TFLOP/s), vs torch.bmm", "unigpu_bmm_f32_TFLOPs", "torch_bmm_f32_TFLOPs", "higher"),
    ("bmm bf16 32x512^3 (TFLOP/s), vs torch.bmm", "unigpu_bmm_bf16_TFLOPs", "torch_bmm_bf16_TFLOPs", "higher"),
    ("mm a.T·b f32 4096 (TFLOP/s), vs plain mm", "unigpu_mm_at_b_f32_TFLOPs", "unigpu_mm_plain_f32_TFLOPs", "higher"),
]
rows += [
    ("torch backend axpy f32 2^26 (GB/s), vs torch add_", "unigpu_torchbe_axpy_f32_GBps", "torch_axpy_f32_GBps", "higher"),
    ("torch backend matmul f32 4096 (TFLOP/s), vs torch", "unigpu_torchbe_matmul_f32_TFLOPs", "torch_matmul_f32_TFLOPs", "higher"),
    ("torch backend matmul bf16 4096 (TFLOP/s), vs torch", "unigpu_torchbe_matmul_bf16_TFLOPs", "torch_matmul_bf16_TFLOPs", "higher"),
    ("torch backend bmm f32 32x512^3 (TFLOP/s), vs torch.bmm", "unigpu_torchbe_bmm_f32_TFLOPs", "torch_bmm_f32_TFLOPs", "higher"),
    ("torch backend bmm bf16 32x512^3 (TFLOP/s), vs torch.bmm", "unigpu_torchbe_bmm_bf16_TFLOPs", "torch_bmm_bf16_TFLOPs", "higher"),
    ("torch backend tiny op submit (us), vs torch small op (Python)", "unigpu_torchbe_small_op_submit_us", "torch_small_op_submit_us", "lower"),
    ("torch -> cuda move 256MiB (GB/s), vs torch clone", "unigpu_torchbe_to_cuda_256MiB_GBps", "torch_clone_256MiB_GBps", "higher"),
]
for mib in (64, 256):
    rows += [
        (f"bridge to_stream H2D pinned {mib}MiB (GB/s), vs torch copy_", f"unigpu_torch_to_stream_h2d_pinned_{mib}MiB_GBps", f"torch_h2d_pinned_{mib}MiB_GBps", "higher"),
        (f"bridge copy_from H2D pinned {mib}MiB (GB/s), vs torch copy_", f"unigpu_torch_copy_h2d_pinned_{mib}MiB_GBps", f"torch_h2d_pinned_{mib}MiB_GBps", "higher"),
        (f"bridge copy_from D2H pinned {mib}MiB (GB/s), vs torch copy_", f"unigpu_torch_copy_d2h_pinned_{mib}MiB_GBps", f"torch_d2h_pinned_{mib}MiB_GBps", "higher"),
        (f"bridge to_stream D2H {mib}MiB (GB/s), vs torch pinned copy_", f"unigpu_torch_to_stream_d2h_{mib}MiB_GBps", f"torch_d2h_pinned_{mib}MiB_GBps", "higher"),
    ]
# Pageable transfers (issue 29 item 3; bench/anchors/transfer_anchors.py).
for mib in (1, 16, 64, 256):
    for peer, up, down, new in (("torch", "copy_", "copy_ to host", ".cpu()"), ("cupy", "set()", "get(out=)", "asnumpy")):
        rows += [
            (f"upload pageable {mib}MiB (GB/s), vs {peer} {up}", f"unigpu_h2d_pageable_{mib}MiB_GBps", f"{peer}_h2d_pageable_{mib}MiB_GBps", "higher"),
            (f"download pageable {mib}MiB (GB/s), vs {peer} {down}", f"unigpu_d2h_pageable_{mib}MiB_GBps", f"{peer}_d2h_pageable_{mib}MiB_GBps", "higher"),
            (f"download new {mib}MiB (GB/s), vs {peer} {new}", f"unigpu_d2h_new_vec_{mib}MiB_GBps", f"{peer}_d2h_{'cpu' if peer == 'torch' else 'asnumpy'}_{mib}MiB_GBps", "higher"),
        ]
if cpu:
    # Same keys on both sides: unigpu_cpu_<op>_ms vs numpy_cpu_<op>_ms.
    ops = ["relu_4Mi", "add_4Mi", "sigmoid_4Mi", "sum_4Mi", "max_4Mi", "dot_4Mi", "matmul_512", "matmul_1024"]
    rows = [(f"{op} f32 (ms), vs numpy", f"unigpu_cpu_{op}_ms", f"numpy_cpu_{op}_ms", "lower") for op in ops]
# Issue 28's ops (array_ops.rs), paired by name as anchors.rs's FAMILIES.
if cpu:
    rows += [(f"op {k[len('unigpu_cpu_op_'):-3]} 4Mi f32 (ms), vs numpy", k, "numpy" + k[len("unigpu"):], "lower")
             for k in raw if k.startswith("unigpu_cpu_op_") and k.endswith("_ms")]
else:
    rows += [(f"op {k[len('unigpu_op_'):-len('_f32_GBps')]} f32 2^24 (GB/s), vs torch", k, "torch" + k[len("unigpu"):], "higher")
             for k in raw if k.startswith("unigpu_op_") and k.endswith("_GBps")]
print(f"{'figure':52} {'unigpu':>10} {'anchor':>10} {'ratio':>7}")
for label, ours, anchor, better in rows:
    if ours in vals and anchor in vals:
        r = vals[ours] / vals[anchor]
        print(f"{label:52} {vals[ours]:>10.4g} {vals[anchor]:>10.4g} {r:>6.3f}x ({better} is better)")
    else:
        print(f"{label:52} missing: {ours if ours not in vals else anchor}")
for k in ("nproc", "cpu_model", "numpy_version") if cpu else ("unigpu_compile_first_origin", "unigpu_compile_first_ms", "disk_compile_first_origin", "disk_compile_first_ms"):
    if k in raw:
        print(f"{k} {raw[k]}")
