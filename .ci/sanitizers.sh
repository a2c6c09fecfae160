#!/usr/bin/env bash
# CI: the Rust suites that hold unsafe code, under AddressSanitizer (with
# LeakSanitizer) and ThreadSanitizer, on the CPU backend (docs/reliability.md).
#
#   SANITIZERS        which to run (default: "address thread")
#   SANITIZER_KEEP=1  keep target/asan and target/tsan afterwards (they are
#                     removed by default: CI runs out of disk before time)
#
# TSan rebuilds std with the sanitizer (-Zbuild-std): it needs every atomic
# instrumented, or std's own locks read as races. ASan does not: it
# intercepts malloc, free and memcpy, and the std code that touches our
# memory is generic (Vec, slices, ptr::copy), so it is compiled into our
# crates, instrumented; skipping std's own build saves CI minutes. Host
# code (build scripts, proc macros) is built without either, which is why
# --target is named.
#
# Needs: rustup's stable toolchain (nightly flags through RUSTC_BOOTSTRAP=1)
# and its rust-src component (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTC_BOOTSTRAP=1 CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0
# Features as these packages ask for them (.ci/run unifies them over the
# workspace, which would turn the vulkan backend back on).
unset CARGO_UNSTABLE_FEATURE_UNIFICATION CARGO_RESOLVER_FEATURE_UNIFICATION

START=$(date +%s)
elapsed() { echo $(($(date +%s) - $1)); }
step() { printf '\n=== %s (%d s)\n' "$*" "$(elapsed "$START")"; }

HOST=$(rustc -vV | sed -n 's/^host: //p')
SANITIZERS=${SANITIZERS:-address thread}
rustup component list --installed 2>/dev/null | grep -q '^rust-src' || rustup component add rust-src

# ASan: the crates with unsafe blocks that run without a GPU: the facade
# (CPU backend, DLPack, allocator, pinned and unified memory), the C ABI
# and its runtime, and the safe CUDA layer's host-side code (DLPack checks,
# module loading errors). TSan: those that start threads, the facade (its
# streams are threads, its ops split over rayon's) and the C ABI (handles
# shared across threads). Without default features: no vulkan, whose
# lavapipe driver is neither instrumented nor ours.
# TSan takes the test binaries where threads meet (the rest exercise the
# same stream threads with nothing racing them, and each binary is another
# sanitized link).
# ASan takes the facade's test binaries whose code reaches unsafe blocks
# that run on the CPU (buffers, views, DLPack, the allocator, pinned and
# unified memory, kernel arguments, streams and graphs), every test of the
# other three crates, and leaves out the binaries that test configuration,
# error texts, kernel-language rules or GPU-only paths (each binary is
# another sanitized link).
ASAN_PACKAGES=(-p unigpu -p unigpu-capi -p unigpu-capi-runtime -p unigpu-cuda-safe --lib
  --test arrays --test dlpack --test unified --test pinned --test allocator --test kernels
  --test kernel_macro --test kernel_fault --test ops --test elementwise --test axes
  --test shapes --test streams --test graphs --test pipeline --test churn --test random
  --test cast --test create --test out_of_memory --test fuzz_regressions --test c_program
  --test threads --test no_driver --test no_nccl)
TSAN_PACKAGES=(-p unigpu -p unigpu-capi --lib --test streams --test pipeline --test graphs
  --test churn --test ops --test kernels --test arrays --test unified --test pinned
  --test context --test rendezvous --test threads)

SUMMARY=()
for sanitizer in $SANITIZERS; do
  case $sanitizer in
    address) dir=target/asan; PACKAGES=("${ASAN_PACKAGES[@]}"); STD=() ;;
    thread) dir=target/tsan; PACKAGES=("${TSAN_PACKAGES[@]}"); STD=(-Zbuild-std) ;;
    *) echo "unknown sanitizer: $sanitizer (address or thread)" >&2; exit 2 ;;
  esac
  flags="-Zsanitizer=$sanitizer -Cdebuginfo=line-tables-only --cfg unigpu_sanitizer"
  step "$sanitizer: build${STD:+ (std included)}"
  t=$(date +%s)
  RUSTFLAGS="$flags" cargo test "${STD[@]}" --target "$HOST" --target-dir "$dir" \
    "${PACKAGES[@]}" --no-default-features --no-run
  built=$(elapsed "$t")

  step "$sanitizer: run"
  log=$(mktemp)
  t=$(date +%s)
  set +e
  # Any report fails the test binary that made it (ASan halts on the first
  # error by default, TSan is told to). The skipped test runs a nested
  # `cargo build` of the staticlib, which these RUSTFLAGS without
  # -Zbuild-std cannot build; .ci/capi-tests.sh runs that C program under
  # ASan and UBSan itself.
  ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1" \
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
    RUSTFLAGS="$flags" cargo test "${STD[@]}" --target "$HOST" --target-dir "$dir" \
    "${PACKAGES[@]}" --no-default-features --no-fail-fast -- \
    --skip c_and_cpp_programs_on_the_staticlib 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  ran=$(elapsed "$t")
  passed=0 failed=0
  while read -r p f; do passed=$((passed + p)); failed=$((failed + f)); done \
    < <(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$log")
  reports=$(grep -cE '^(==[0-9]+==ERROR: |WARNING: ThreadSanitizer)' "$log" || true)
  rm -f "$log"
  SUMMARY+=("$(printf '%-8s built in %4d s, ran in %4d s: %d passed, %d failed, %d sanitizer reports (exit %d)' \
    "$sanitizer" "$built" "$ran" "$passed" "$failed" "$reports" "$rc")")
  echo "$dir holds $(du -sh "$dir" | cut -f1)"
  [ "${SANITIZER_KEEP:-0}" = 1 ] || rm -rf "$dir"
  if [ "$rc" -ne 0 ] || [ "$passed" -eq 0 ]; then
    printf '%s\n' "${SUMMARY[@]}"
    echo "error: the $sanitizer sanitizer run failed (a report above names the fault)" >&2
    exit 1
  fi
done

step "summary"
printf '%s\n' "${SUMMARY[@]}"
