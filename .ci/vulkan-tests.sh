#!/usr/bin/env bash
# CI for the vulkan backend, on Mesa's lavapipe (a Vulkan driver that runs
# on the CPU): installs the loader and the driver, then runs, for real,
# every vulkan test of the facade (the `::vulkan` variant of each
# cross-backend test, the hand-written variants and tests/vulkan.rs), which
# are #[ignore]d in plain `cargo test` because they need an adapter. Fails
# unless every listed vulkan test ran and passed, on lavapipe; then the
# fallback chain must pass lavapipe over for the CPU (a software adapter)
# and name it, and example 11 must run on it; then the kernel macro's WGSL
# mutations must each be caught.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

step() { printf '\n==> %s\n' "$*"; }

step "Mesa's lavapipe and the Vulkan loader"
if ! ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 || ! ldconfig -p | grep -q 'libvulkan\.so\.1 '; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends mesa-vulkan-drivers libvulkan1 >/dev/null
fi
ls /usr/share/vulkan/icd.d/
# Mesa's device-select layer asks a display server (there is none) which
# GPU to prefer, and says so on stderr; it has nothing to choose here.
export NODEVICE_SELECT=1

step "build"
cargo test -q -p unigpu --tests --no-run

step "the vulkan tests (ignored by default: they need an adapter)"
# The ::vulkan variant of every cross-backend test (and the hand-written
# ones), then every test of tests/vulkan.rs.
list() { cargo test -q -p unigpu "$@" --list --format=terse 2>/dev/null | sed -n 's/: test$//p' | sort; }
list --tests -- --ignored | grep -E '::vulkan$' >"$work/variants.txt" || true
list --test vulkan -- --include-ignored >"$work/file.txt"
listed=$(( $(wc -l <"$work/variants.txt") + $(wc -l <"$work/file.txt") ))
echo "$(wc -l <"$work/variants.txt") ::vulkan variants, $(wc -l <"$work/file.txt") tests in tests/vulkan.rs"
[ "$(wc -l <"$work/variants.txt")" -gt 0 ] || { echo "error: no ::vulkan variant was listed" >&2; exit 1; }

set +e
cargo test -p unigpu --tests --no-fail-fast -- --ignored ::vulkan --show-output >"$work/run.txt" 2>&1
rc1=$?
cargo test -p unigpu --test vulkan --no-fail-fast -- --include-ignored >>"$work/run.txt" 2>&1
rc2=$?
set -e
grep -E '^test .* \.\.\. ' "$work/run.txt" >"$work/results.txt" || true
passed=$(grep -c ' \.\.\. ok$' "$work/results.txt" || true)
failed=$(grep -c ' \.\.\. FAILED$' "$work/results.txt" || true)
echo "exit $rc1 and $rc2: $passed passed, $failed failed, of $listed listed"
if [ "$rc1" -ne 0 ] || [ "$rc2" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$passed" -ne "$listed" ]; then
  grep -E ' \.\.\. (FAILED|ignored)' "$work/results.txt" || true
  # The failures' output (passing tests' output is shown too, for the
  # adapter line: skip to the failures).
  awk '/^failures:$/ {on = 1} /^test result:/ {on = 0} on' "$work/run.txt" | head -120 || true
  echo "error: every vulkan test must run and pass on lavapipe" >&2
  exit 1
fi
# The tests name the adapter they ran on (common::vulkan_ctx).
if ! grep -q '^vulkan adapter 0: llvmpipe' "$work/run.txt"; then
  echo "error: the vulkan tests did not run on lavapipe (llvmpipe):" >&2
  grep -E '^vulkan adapter 0:' "$work/run.txt" >&2 || true
  exit 1
fi

step "unigpu info: lavapipe listed, and passed over for the CPU as a software adapter"
cargo run -q -p unigpu-cli -- info >"$work/info.txt"
cat "$work/info.txt"
grep -q '^  vulkan skipped: .*only a software adapter (llvmpipe' "$work/info.txt"
grep -q '^  vulkan:0  llvmpipe' "$work/info.txt"

step "example 11 on lavapipe, and 05 with UNIGPU_BACKEND=vulkan"
cargo run -q -p unigpu --example 11_vulkan
saxpy=$(UNIGPU_BACKEND=vulkan cargo run -q -p unigpu --example 05_saxpy)
printf '%s\n' "$saxpy"
grep -q '^saxpy on vulkan:' <<<"$saxpy"
step "the WGSL emitter's mutations (kernel macro), against kernel_macro.rs on lavapipe"
# About 40 s on the 2-core machine: the baseline and two mutations, each a
# rebuild of the macro and one test binary (docs/testing.md).
cargo xtask mutants --vulkan --only "wgsl emitter"
echo "vulkan: $passed tests passed on lavapipe"
