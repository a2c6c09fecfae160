#!/usr/bin/env bash
# CI: every fuzz target of fuzz/ (cargo fuzz, libFuzzer + ASan; docs/fuzzing.md)
# for a bounded time from the seed corpus committed in fuzz/corpus/<target>/.
#
#   FUZZ_SECONDS   seconds per target (default 60)
#   FUZZ_TARGETS   space-separated targets (default: all of `cargo fuzz list`)
#   FUZZ_TIMEOUT   seconds one input may take before it counts as a hang (default 30)
#   FUZZ_BUILD     release (default: optimized, with debug assertions) or dev
#                  (unoptimized: builds in 222 s instead of 521 s on 2 cores,
#                  but runs 15 to 25 times fewer inputs a second)
#
# The seeds are copied to a temporary folder, so a run never changes the
# repository (what the corpus grows into is thrown away). A crash, a panic,
# an ASan report, a leak or a hang fails the script, which prints the path of
# the input that caused it (kept under fuzz/artifacts/<target>/, which git
# ignores) and the command that replays it.
#
# Needs: rustup's stable toolchain (nightly features through
# RUSTC_BOOTSTRAP=1), a C++ compiler for libFuzzer (installed with apt-get
# when missing), and network access the first time, to install cargo-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

CARGO_FUZZ_VERSION=0.13.2
SECONDS_PER_TARGET=${FUZZ_SECONDS:-60}
TIMEOUT=${FUZZ_TIMEOUT:-30}
case ${FUZZ_BUILD:-release} in
  release) MODE=() ;; # cargo fuzz's default; its -O would drop the debug assertions
  dev) MODE=(--dev) ;;
  *) echo "FUZZ_BUILD must be release or dev (got ${FUZZ_BUILD})" >&2; exit 2 ;;
esac
export RUSTC_BOOTSTRAP=1 CARGO_TERM_COLOR=never CARGO_INCREMENTAL=0

START=$(date +%s)
elapsed() { echo $(($(date +%s) - $1)); }
step() { printf '\n=== %s\n' "$*"; }

# --- tools ----------------------------------------------------------------------
need=()
command -v c++ >/dev/null || need+=(g++)
command -v cc >/dev/null || need+=(gcc)
if [ ${#need[@]} -gt 0 ]; then
  step "apt-get install ${need[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
if ! cargo fuzz --version 2>/dev/null | grep -qF "$CARGO_FUZZ_VERSION"; then
  step "cargo install --locked cargo-fuzz@$CARGO_FUZZ_VERSION"
  t=$(date +%s)
  cargo install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
  echo "installed in $(elapsed "$t") s"
fi
cargo fuzz --version

TARGETS=${FUZZ_TARGETS:-$(cargo fuzz list)}

# --- build ----------------------------------------------------------------------
step "cargo fuzz build, ${FUZZ_BUILD:-release} (ASan, debug assertions): $(echo $TARGETS | tr '\n' ' ')"
t=$(date +%s)
cargo fuzz build "${MODE[@]}"
BUILD_S=$(elapsed "$t")
echo "built in $BUILD_S s; fuzz/target holds $(du -sh fuzz/target | cut -f1)"

# --- runs -----------------------------------------------------------------------
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
SUMMARY=()
FAILED=()
for target in $TARGETS; do
  step "$target: ${SECONDS_PER_TARGET} s from fuzz/corpus/$target"
  corpus="$WORK/corpus/$target"
  mkdir -p "$corpus" "fuzz/artifacts/$target"
  if [ -d "fuzz/corpus/$target" ]; then cp -R "fuzz/corpus/$target/." "$corpus/"; fi
  log="$WORK/$target.log"
  t=$(date +%s)
  set +e
  cargo fuzz run "${MODE[@]}" "$target" "$corpus" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout="$TIMEOUT" \
    -print_final_stats=1 -artifact_prefix="$ROOT/fuzz/artifacts/$target/" \
    >"$log" 2>&1
  rc=$?
  set -e
  took=$(elapsed "$t")
  # (A run that crashed prints no final stats: no match is no error.)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log"
    crash=$(grep -o "Test unit written to [^ ]*" "$log" | tail -1 | sed 's/Test unit written to //' || true)
    echo
    echo "FAILED: $target (exit $rc) after ${took} s"
    if [ -n "$crash" ]; then
      echo "crashing input: $crash"
      echo "replay: RUSTC_BOOTSTRAP=1 cargo fuzz run $target $crash"
    fi
    FAILED+=("$target")
    SUMMARY+=("$(printf '%-18s FAILED after %4s s  %s' "$target" "$took" "${crash:-(see the log above)}")")
  else
    grep -E '^#[0-9]+ +DONE' "$log" | tail -1 || true
    SUMMARY+=("$(printf '%-18s %4s s  %10s execs  %6s exec/s  cov %s' "$target" "$took" "${execs:-?}" "${rate:-?}" "${cov:-?}")")
  fi
done

step "summary"
echo "build: ${BUILD_S} s"
printf '%s\n' "${SUMMARY[@]}"
echo "total: $(elapsed "$START") s; fuzz/target: $(du -sh fuzz/target | cut -f1)"
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "fuzzing found a problem in: ${FAILED[*]}"
  exit 1
fi
