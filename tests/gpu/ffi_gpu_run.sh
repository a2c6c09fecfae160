#!/usr/bin/env bash
# The C API and the Python package on the GPU machine, in one call (after
# tests/gpu/ffi_gpu_pack.sh): the C test on the cuda backend (C and C++), the
# pytest suite with its CUDA variants and the torch/CuPy DLPack tests, then
# the anchors (floor.cu, torch_cupy_baseline.py) and the overhead benchmarks
# in the same run.
set -u
cd "$(dirname "$0")/../.."
out="${OUT:-/tmp/unigpu-ffi}"; mkdir -p "$out"
export LD_LIBRARY_PATH="/opt/torch/.venv/lib/python3.12/site-packages/torch/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export RUST_BACKTRACE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .gpu-ffi/wheels/unigpu-*.whl || exit 1
export PYTHONPATH=/tmp/site
failed=0
for bin in capi_test capi_test_cpp; do
  UNIGPU_BACKEND=cuda ".gpu-ffi/bin/$bin" >"$out/$bin.log" 2>&1 || failed=1
  echo "$bin (cuda): $(tail -n 1 "$out/$bin.log")"; grep '^FAIL' "$out/$bin.log" | head -n 20
done
UNIGPU_TEST_GPU=1 python3 -m pytest -q -rs -p no:cacheprovider python/tests >"$out/pytest.log" 2>&1 || failed=1
echo "pytest (UNIGPU_TEST_GPU=1): $(tail -n 1 "$out/pytest.log")"; grep -E '^(FAILED|ERROR)' "$out/pytest.log" | head -n 20
log="$out/bench.txt"; : >"$log"
nvcc -O2 -o /tmp/floor bench/anchors/floor.cu -lcuda && /tmp/floor >>"$log" 2>&1
python3 bench/anchors/torch_cupy_baseline.py >>"$log" 2>&1
python3 bench/runners/python_overhead.py --backend cuda 2>&1 | tee -a "$log"
.gpu-ffi/bin/capi_overhead 2>&1 | tee -a "$log"
grep -E '^(raw_runtime_launch_submit_us|torch_small_op_submit_us|cupy_empty_launch_submit_us|device) ' "$log"
echo "ffi GPU run: $([ $failed = 0 ] && echo ok || echo FAILED)"
exit $failed
