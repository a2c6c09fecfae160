#!/usr/bin/env bash
# CI for unigpu's C API (crates/capi, include/unigpu.h; docs/c-api.md), on CPU:
#
# 1. include/unigpu.h is fresh (cargo xtask gen --check), fmt and clippy;
# 2. libunigpu.a / libunigpu.so in release;
# 3. tests/c/capi_test.c linked against the staticlib: as C11 and as C++17
#    (-Wall -Wextra -Werror), plainly, under valgrind (zero errors, zero
#    definite or indirect leaks) and with ASan + UBSan (leak detection on);
# 4. the same program built through the installed package
#    (`cargo xtask capi-install`): pkg-config (shared and static) and CMake
#    (unigpu::unigpu_static and unigpu::unigpu);
# 5. features torch and cuda: every function of include/ug_torch.h and
#    include/ug_cuda_rt.h is exported by both libraries, and tests/c/tiers_smoke.c
#    calls all three APIs through libunigpu.so (needs .venv-torch and
#    .venv-cuda, which .ci/torch-tests.sh and .ci/gen-tests.sh set up; this
#    script installs the same pip packages if they are missing);
# 6. the overhead benchmark (printed; nothing is asserted on timings).
#
# Installs what it needs: gcc, g++, valgrind, pkg-config, cmake, python3-venv
# (apt-get), rustfmt and clippy (rustup). The GPU variant of step 3 is
# `UNIGPU_BACKEND=cuda ./capi_test` on the GPU machine.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
START=$(date +%s)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
SUMMARY=()
PASSED=0
FAILED=0

step() { printf '\n==> %s\n' "$*"; }

# Runs a C test program and records its closing "N passed, N failed" line.
run_c() {
  local label=$1
  shift
  step "$label"
  local log="$OUT/run.log"
  set +e
  RUST_BACKTRACE=0 "$@" > "$log" 2> "$OUT/run.err"
  local rc=$?
  set -e
  grep -v '^capi_test: unigpu' "$log" | grep -E 'FAIL|passed' | tail -n 20 || true
  local line
  line=$(tail -n 1 "$log")
  if [ $rc -ne 0 ]; then
    echo "error: $label exited with $rc" >&2
    tail -n 40 "$OUT/run.err" >&2
    FAILED=$((FAILED + 1))
    SUMMARY+=("$(printf '%-44s FAILED (exit %d)' "$label" "$rc")")
    return 1
  fi
  PASSED=$((PASSED + 1))
  SUMMARY+=("$(printf '%-44s %s' "$label" "${line#*: }")")
}

# --- system packages ---------------------------------------------------------
need=()
command -v gcc >/dev/null || need+=(gcc)
command -v g++ >/dev/null || need+=(g++)
command -v valgrind >/dev/null || need+=(valgrind)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cmake >/dev/null || need+=(cmake make)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if command -v rustup >/dev/null; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi

# --- 1. header, format, lints --------------------------------------------------
step "include/unigpu.h is fresh (cargo xtask gen --check)"
cargo xtask gen --check
step "fmt and clippy (unigpu-capi)"
cargo fmt -p unigpu-capi -p unigpu-clib --check
cargo clippy -p unigpu-capi -p unigpu-clib --all-targets -- -D warnings

# --- 2. the libraries ------------------------------------------------------------
step "cargo build -p unigpu-clib --release"
cargo build -p unigpu-clib --release
LIB="$ROOT/target/release/libunigpu.a"
ls -l "$LIB" "$ROOT/target/release/libunigpu.so"
# Every function of include/unigpu.h is exported by both libraries (the
# code is in the unigpu-capi rlib that unigpu-clib links in).
declared=$(grep -oE '\bug_[a-z0-9_]+\(' include/unigpu.h | tr -d '(' | sort -u)
so=$(nm -D --defined-only "$ROOT/target/release/libunigpu.so" | awk '$2 == "T" {print $3}' | sort -u)
a=$(nm --defined-only "$LIB" 2>/dev/null | awk '$2 == "T" {print $3}' | sort -u)
n=0
for f in $declared; do
  n=$((n + 1))
  grep -qx "$f" <<< "$so" || { echo "error: libunigpu.so does not export $f" >&2; exit 1; }
  grep -qx "$f" <<< "$a" || { echo "error: libunigpu.a does not define $f" >&2; exit 1; }
done
echo "unigpu.h: $n functions exported by libunigpu.so and libunigpu.a"
SYSLIBS=(-lpthread -ldl -lm -lrt)
SRC="$ROOT/tests/c/capi_test.c"
WARN=(-Wall -Wextra -Werror)

# --- 3. the C test: C, C++, valgrind, ASan + UBSan --------------------------------
# No Vulkan loader for the C runs (UNIGPU_TEST_VULKAN_LOADER points it at
# nothing): under valgrind, glibc's dlopen of the driver stack reads past a
# string (strncmp's word reads), and under ASan Mesa's lavapipe (its LLVM
# JIT) would be slow. The vulkan paths of the C API then say "no Vulkan
# loader"; the vulkan backend itself is tested by .ci/vulkan-tests.sh.
export UNIGPU_TEST_VULKAN_LOADER=/nonexistent/unigpu-capi/libvulkan.so.1
step "build tests/c/capi_test.c: C11, C++17, ASan + UBSan"
gcc -std=c11 -pedantic "${WARN[@]}" -g -I include "$SRC" "$LIB" "${SYSLIBS[@]}" -o "$OUT/capi_test"
g++ -x c++ -std=c++17 "${WARN[@]}" -g -I include "$SRC" -x none "$LIB" "${SYSLIBS[@]}" -o "$OUT/capi_test_cpp"
gcc -std=c11 -pedantic "${WARN[@]}" -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
  -fno-omit-frame-pointer -I include "$SRC" "$LIB" "${SYSLIBS[@]}" -o "$OUT/capi_test_asan"

run_c "C11 program (staticlib)" "$OUT/capi_test"
gcc -std=c11 -pedantic "${WARN[@]}" -I include tests/c/example.c "$LIB" "${SYSLIBS[@]}" -o "$OUT/example"
step "docs/c-api.md's example (tests/c/example.c)"
"$OUT/example"
run_c "C++17 program (staticlib)" "$OUT/capi_test_cpp"
run_c "valgrind --leak-check=full" valgrind --fair-sched=yes --leak-check=full --errors-for-leak-kinds=definite,indirect \
  --error-exitcode=1 "$OUT/capi_test"
grep -E 'ERROR SUMMARY|definitely lost|indirectly lost' "$OUT/run.err" || true
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  run_c "ASan + UBSan (detect_leaks=1)" "$OUT/capi_test_asan"

# --- 4. the installed package: pkg-config and CMake ------------------------------
PREFIX="$OUT/prefix"
step "cargo xtask capi-install --prefix $PREFIX"
cargo xtask capi-install --prefix "$PREFIX"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
echo "pkg-config: $(pkg-config --modversion unigpu): $(pkg-config --cflags --libs unigpu)"
# shellcheck disable=SC2046
gcc -std=c11 -pedantic "${WARN[@]}" $(pkg-config --cflags unigpu) "$SRC" $(pkg-config --libs unigpu) \
  -lpthread -lm -Wl,-rpath,"$(realpath "$(pkg-config --variable=libdir unigpu)")" -o "$OUT/capi_test_pc_shared"
# shellcheck disable=SC2046
gcc -std=c11 -pedantic "${WARN[@]}" $(pkg-config --cflags unigpu) "$SRC" \
  $(pkg-config --static --libs unigpu | sed 's/-lunigpu\b/-l:libunigpu.a/') -o "$OUT/capi_test_pc_static"
ldd "$OUT/capi_test_pc_shared" | grep -q "$PREFIX/lib/libunigpu.so"
if ldd "$OUT/capi_test_pc_static" | grep -q libunigpu; then
  echo "error: the static build links libunigpu.so" >&2
  exit 1
fi
run_c "pkg-config, libunigpu.so" "$OUT/capi_test_pc_shared"
run_c "pkg-config --static, libunigpu.a" "$OUT/capi_test_pc_static"

step "the package is relocatable: the same build from a copy of the prefix"
MOVED="$OUT/moved-prefix"
cp -a "$PREFIX" "$MOVED"
moved_flags=$(PKG_CONFIG_PATH="$MOVED/lib/pkgconfig" pkg-config --cflags --libs unigpu)
echo "pkg-config (moved): $moved_flags"
case "$moved_flags" in
  *"$PREFIX/"*) echo "error: unigpu.pc names the prefix it was installed to" >&2; exit 1 ;;
esac
# shellcheck disable=SC2046
gcc -std=c11 -pedantic "${WARN[@]}" $(PKG_CONFIG_PATH="$MOVED/lib/pkgconfig" pkg-config --cflags unigpu) \
  "$SRC" $(PKG_CONFIG_PATH="$MOVED/lib/pkgconfig" pkg-config --libs unigpu) \
  -lpthread -lm -Wl,-rpath,"$MOVED/lib" -o "$OUT/capi_test_pc_moved"
ldd "$OUT/capi_test_pc_moved" | grep -q "$MOVED/lib/libunigpu.so"
run_c "pkg-config from a moved prefix, libunigpu.so" "$OUT/capi_test_pc_moved"

step "CMake: find_package(unigpu) from tests/c/CMakeLists.txt"
cmake -S tests/c -B "$OUT/cmake" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release > "$OUT/cmake.log" \
  || { cat "$OUT/cmake.log"; exit 1; }
grep 'unigpu ' "$OUT/cmake.log" || true
cmake --build "$OUT/cmake" -j 2 > "$OUT/cmake-build.log" || { cat "$OUT/cmake-build.log"; exit 1; }
run_c "CMake, unigpu::unigpu_static" "$OUT/cmake/capi_test_static"
run_c "CMake, unigpu::unigpu" "$OUT/cmake/capi_test_shared"

# --- 5. the generated tiers in the same library ----------------------------------
step "features torch,cuda: the generated tiers exported by libunigpu"
CUDA_VENV="$ROOT/.venv-cuda"
TORCH_VENV="$ROOT/.venv-torch"
[ -x "$CUDA_VENV/bin/python" ] || python3 -m venv "$CUDA_VENV"
"$CUDA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88
[ -x "$TORCH_VENV/bin/python" ] || python3 -m venv "$TORCH_VENV"
"$TORCH_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  torch==2.11.0 nvidia-cuda-crt==13.0.88
SITE=$("$CUDA_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
header=$(find "$SITE/nvidia" -name cuda_runtime.h -path '*/include/*' | head -n 1)
export UNIGPU_CUDA_HOME
UNIGPU_CUDA_HOME=$(dirname "$(dirname "$header")")
TORCH_LIB=$("$TORCH_VENV/bin/python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
(
  export PATH="$TORCH_VENV/bin:$PATH" LIBTORCH_USE_PYTORCH=1
  cargo build -p unigpu-clib --features torch,cuda
)
FLIB="$ROOT/target/debug"
missing=0
for tier in ug_torch ug_cuda_rt; do
  declared=$(grep -E "^[a-z_0-9]+[ *]+${tier}_[a-z0-9_]+\(" "include/$tier.h" | grep -oE "${tier}_[a-z0-9_]+\(" | tr -d '(' | sort -u)
  so=$(nm -D --defined-only "$FLIB/libunigpu.so" | awk '$2 == "T" {print $3}' | sort -u)
  a=$(nm --defined-only "$FLIB/libunigpu.a" 2>/dev/null | awk '$2 == "T" {print $3}' | sort -u)
  n=0
  for f in $declared; do
    n=$((n + 1))
    grep -qx "$f" <<< "$so" || { echo "error: libunigpu.so does not export $f" >&2; missing=1; }
    grep -qx "$f" <<< "$a" || { echo "error: libunigpu.a does not define $f" >&2; missing=1; }
  done
  echo "$tier: $n functions of include/$tier.h exported by libunigpu.so and libunigpu.a"
done
[ "$missing" -eq 0 ]
gcc -std=c11 -pedantic "${WARN[@]}" -I include tests/c/tiers_smoke.c -L "$FLIB" -lunigpu \
  -Wl,-rpath,"$FLIB" -Wl,-rpath-link,"$TORCH_LIB:$UNIGPU_CUDA_HOME/lib" -o "$OUT/tiers_smoke"
LD_LIBRARY_PATH="$TORCH_LIB:$UNIGPU_CUDA_HOME/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  run_c "tiers_smoke (torch + cuda + ug_*)" "$OUT/tiers_smoke"
grep -v ' passed, ' "$OUT/run.log" || true

# --- 6. overhead of the C API over the Rust facade -------------------------------
step "cargo bench -p unigpu-capi --bench capi_overhead (CPU; printed, not asserted)"
cargo bench -q -p unigpu-capi --bench capi_overhead 2>/dev/null | grep '^capi_overhead'

# --- summary -----------------------------------------------------------------
printf '\n==> capi-tests summary (%ss)\n' "$(($(date +%s) - START))"
printf '%s\n' "${SUMMARY[@]}"
printf 'capi-tests: %d passed, %d failed\n' "$PASSED" "$FAILED"
[ "$FAILED" -eq 0 ]
