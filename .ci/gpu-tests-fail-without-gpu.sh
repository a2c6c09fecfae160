#!/usr/bin/env bash
# On a machine without a GPU, runs every GPU-marked (#[ignore]d) test once
# with `--ignored` and requires that each one ran and FAILED, with a panic
# message naming the missing GPU ("this test needs a CUDA GPU ...", "needs
# two CUDA GPUs ...", "these tests need a CUDA GPU ..."). An ignored test that passes here asserts nothing
# where it runs; one that fails for another reason hides its real check.
# A test ignored as a known failure (#[ignore = "fails: ..."]) must still
# fail here: once it passes, its #[ignore] has to go.
#
# Arguments go to cargo (default: --workspace), e.g.
#   bash .ci/gpu-tests-fail-without-gpu.sh -p unigpu --features unigpu/torch
# Debug build, test targets only (doc tests have no GPU variants).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- --workspace
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo test -q "$@" --tests --no-run
# What should run: every ignored test of every test binary.
cargo test -q "$@" --tests -- --ignored --list --format=terse >"$work/list.txt" 2>"$work/list.err" || {
  cat "$work/list.err" >&2; exit 1; }
# Their ignore reasons: a normal run filtered to exactly those names reports
# each as "ignored, <reason>" without running it.
sed -n 's/: test$//p' "$work/list.txt" | sort -u >"$work/names.txt"
if [ -s "$work/names.txt" ]; then
  mapfile -t names <"$work/names.txt"
  cargo test "$@" --tests --no-fail-fast -- --exact "${names[@]}" >"$work/reasons.txt" 2>&1 || true
else
  : >"$work/reasons.txt"
fi
# The run itself: every ignored test must fail, so cargo exits non-zero.
# The ::vulkan variants are left out: they need a Vulkan adapter, not a
# GPU, and .ci/vulkan-tests.sh runs them (on lavapipe) and checks them.
set +e
cargo test "$@" --tests --no-fail-fast -- --ignored --skip ::vulkan >"$work/run.txt" 2>&1
rc=$?
set -e
echo "cargo test --ignored exited $rc (non-zero expected: every test in it must fail)"

python3 - "$work/list.txt" "$work/run.txt" "$work/reasons.txt" <<'PY'
import re, sys
listed = [l[:-len(": test")] for l in open(sys.argv[1]).read().splitlines() if l.endswith(": test")]
run = open(sys.argv[2]).read().splitlines()
# name -> ignore reasons (one per binary that has the name)
reasons = {}
for line in open(sys.argv[3]).read().splitlines():
    m = re.match(r"^test (.+) \.\.\. ignored(?:, (.*))?$", line)
    if m:
        reasons.setdefault(m.group(1), []).append(m.group(2) or "")
NO_GPU = re.compile(r"needs? (a|one|two|[0-9]+) CUDA GPUs?")
result = {}    # test name -> list of "ok"/"FAILED"/...
messages = {}  # test name -> captured output of its failure
current = None
for line in run:
    m = re.match(r"^test (.+) \.\.\. (ok|FAILED|ignored.*)$", line)
    if m:
        result.setdefault(m.group(1), []).append(m.group(2))
        continue
    m = re.match(r"^---- (.+) stdout ----$", line)
    if m:
        current = m.group(1)
        messages.setdefault(current, [])
        continue
    # A failure's output runs to the next one; embedded output of a child
    # test process may hold "failures:" or "test result:" lines itself.
    if re.match(r"^(     Running |   Doc-tests )", line):
        current = None
    elif current is not None:
        messages[current].append(line)

problems = []
if not listed:
    problems.append("no ignored tests were listed: the list step found nothing to check")
# Tests ignored for another reason than a GPU: a known failure ("fails: ...")
# must still fail (when it passes, its #[ignore] must go); others are listed.
gpu_marked, known_failures, other = [], [], []
for name in sorted(set(listed)):
    # No reason found (the lookup failed): checked as GPU-marked, strictest.
    why = reasons.get(name, ["GPU (reason not found)"])
    if all("GPU" in r for r in why):
        gpu_marked.append(name)
    elif all(r.startswith("fails") for r in why):
        known_failures.append(name)
    else:
        other.append((name, why))
for name in known_failures:
    outcomes = result.get(name, [])
    if "ok" in outcomes:
        problems.append(f"{name}: ignored as a known failure ({reasons[name][0]}) but PASSES: remove its #[ignore]")
    elif "FAILED" in outcomes:
        print(f"known failure, still failing: {name} ({reasons[name][0]})")
    else:
        problems.append(f"{name}: listed as ignored but did not run")
vulkan = [n for n, why in other if all("Vulkan adapter" in r for r in why)]
other = [(n, why) for n, why in other if n not in vulkan]
if vulkan:
    print(f"{len(vulkan)} tests need a Vulkan adapter, not a GPU: .ci/vulkan-tests.sh runs them")
for name, why in other:
    print(f"ignored for another reason, not checked: {name} ({'; '.join(why) or 'no reason given'})")
for name in gpu_marked:
    outcomes = result.get(name)
    if not outcomes:
        problems.append(f"{name}: listed as ignored but did not run")
        continue
    for outcome in outcomes:
        if outcome == "ok":
            problems.append(f"{name}: PASSED without a GPU (it asserts nothing here)")
        elif outcome != "FAILED":
            problems.append(f"{name}: {outcome}")
    if "FAILED" in outcomes:
        text = "\n".join(messages.get(name, []))
        if not NO_GPU.search(text):
            lines = messages.get(name, [])
            at = next((i for i, l in enumerate(lines) if "panicked at" in l), None)
            why = " / ".join(lines[at:at + 2]) if at is not None else (text.strip()[:300] or "(no output)")
            problems.append(f"{name}: failed, but not for a missing GPU: {why}")
unlisted = sorted(n for n in result if n not in set(listed))
for name in unlisted:
    problems.append(f"{name}: ran under --ignored but was not listed as ignored")
failed = sum(1 for n in gpu_marked if "FAILED" in result.get(n, []))
print(f"{len(set(listed))} ignored tests listed, {len(gpu_marked)} of them GPU-marked; {failed} of those failed without a GPU")
if problems:
    print(f"{len(problems)} problem(s):")
    for p in problems:
        print("  " + p)
    sys.exit(1)
print("every GPU-marked test fails here, each naming the missing GPU")
PY
