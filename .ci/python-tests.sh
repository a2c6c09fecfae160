#!/usr/bin/env bash
# CI for the Python package (python/): builds the abi3 wheel with maturin,
# installs it into .venv-python and runs the pytest suite on the CPU backend
# (the CUDA variants skip themselves unless UNIGPU_TEST_GPU=1). A few
# minutes: one release build of the facade plus the extension.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV="$ROOT/.venv-python"
WHEELS="$ROOT/target/wheels"

step() { printf '\n==> %s\n' "$*"; }

step "maturin, numpy, pytest into $VENV"
python3 -c 'import venv, ensurepip' 2>/dev/null || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv
}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "maturin==1.16.0" numpy pytest ml-dtypes
"$VENV/bin/python" -c 'import numpy, pytest, ml_dtypes; print("numpy", numpy.__version__, "pytest", pytest.__version__)'

step "build the wheel (abi3: one wheel for CPython >= 3.9)"
rm -f "$WHEELS"/unigpu-*.whl
"$VENV/bin/maturin" build --release -m python/Cargo.toml --out "$WHEELS" -i "$VENV/bin/python"
wheel=$(ls "$WHEELS"/unigpu-*-cp39-abi3-*.whl)
echo "built $wheel"

step "install it"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# Imported from site-packages, not from the source tree.
(cd /tmp && "$VENV/bin/python" -c 'import unigpu, sys; assert "site-packages" in unigpu.__file__, unigpu.__file__; print("unigpu", unigpu.__version__, "from", unigpu.__file__)')

step "pytest (CPU backend)"
# pytest exits 5 when it collects no test: that must fail here, as any
# other non-zero status does, and a run must have passed something.
log=$(mktemp)
set +e
"$VENV/bin/pytest" -q -rs -p no:cacheprovider python/tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  echo "pytest failed with exit status $status (5 = no tests collected)" >&2
  exit 1
fi
grep -Eq '[1-9][0-9]* passed' "$log" || { echo "pytest passed no test" >&2; exit 1; }

step "the quickstart and MLP examples and the overhead benchmark (CPU)"
(cd /tmp && UNIGPU_BACKEND=cpu "$VENV/bin/python" "$ROOT/python/examples/quickstart.py")
(cd /tmp && UNIGPU_BACKEND=cpu "$VENV/bin/python" "$ROOT/python/examples/mlp.py")
(cd /tmp && "$VENV/bin/python" "$ROOT/bench/runners/python_overhead.py" --backend cpu --iters 2000 --repeat 3 --no-others)
