#!/usr/bin/env bash
# Builds what tests/gpu/ffi_gpu_run.sh runs on the GPU machine (which has no
# Rust): the C test program linked against libunigpu.a, the C-overhead
# benchmark, and the abi3 Python wheel, into .gpu-ffi/ (git-ignored).
# Then: run(command="bash tests/gpu/ffi_gpu_run.sh", carry=[".gpu-ffi"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.gpu-ffi
rm -rf "$dest" && mkdir -p "$dest/bin" "$dest/wheels"
cargo build -q -p unigpu-clib --release
gcc -std=c11 -O2 -I include tests/c/capi_test.c target/release/libunigpu.a \
  -lpthread -ldl -lm -lrt -o "$dest/bin/capi_test"
g++ -x c++ -std=c++17 -O2 -I include tests/c/capi_test.c -x none target/release/libunigpu.a \
  -lpthread -ldl -lm -lrt -o "$dest/bin/capi_test_cpp"
bench=$(cargo bench -q -p unigpu-capi --bench capi_overhead --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "capi_overhead" in m["target"]["name"]:
        print(m["executable"])' | tail -n 1)
cp "$bench" "$dest/bin/capi_overhead"
[ -x .venv-python/bin/maturin ] || bash .ci/python-tests.sh >/dev/null
.venv-python/bin/maturin build -q --release -m python/Cargo.toml --out "$dest/wheels" -i .venv-python/bin/python
strip "$dest"/bin/* 2>/dev/null || true
du -sh "$dest"
