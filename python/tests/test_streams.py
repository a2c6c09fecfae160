"""Streams, events, threads and the GIL.

The CPU backend runs stream work on worker threads, and a kernel's Python
CPU implementation needs the GIL there: every call that waits must release
it, or the process deadlocks. The deadlock-prone cases run in a subprocess
with a timeout, so a regression fails instead of hanging the suite."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import unigpu


def gate_kernel():
    """A CPU-only kernel that blocks in Python until `gate` is set, then
    writes `value` into its array; plus the gate."""
    gate = threading.Event()

    def impl(value, out):
        assert gate.wait(30), "the test never opened the gate"
        out[:] = value

    return unigpu.Kernel.cpu_only("gated", impl, params=["f32", "f32*"]), gate


def test_stream_and_event_state_follow_the_work(cpu):
    k, gate = gate_kernel()
    s = cpu.stream()
    x = cpu.zeros(16)
    start = s.record(timing=True)
    s.launch(k, 1, 1, [5.0, x])
    end = s.record(timing=True)
    # The worker is blocked inside Python; the host is not.
    time.sleep(0.05)
    assert s.is_idle() is False and s.query() is False
    assert end.query() is False
    assert start.query() is True
    gate.set()
    end.sync()
    assert end.query() is True
    # The worker counts a job done just after the job signals its event.
    s.sync()
    assert s.is_idle() is True
    assert start.elapsed_ms(end) >= 0.0
    np.testing.assert_array_equal(x.numpy(), np.full(16, 5.0))


def test_event_orders_two_streams(cpu):
    # The consumer's arrays are its own: nothing but the event orders it
    # after the producer (per-array tracking would order a consumer that
    # touched the producer's array even with a `wait` that did nothing).
    k, gate = gate_kernel()
    produced = threading.Event()

    def observe(out):
        out[:] = 1.0 if produced.is_set() else -1.0

    observer = unigpu.Kernel.cpu_only("observe", observe, params=["f32*"])
    s1, s2 = cpu.stream(), cpu.stream()
    x = cpu.zeros(1000)
    s1.launch(k, 1, 1, [3.0, x])
    s1.launch(unigpu.Kernel.cpu_only("mark", lambda out: produced.set(), params=["f32*"]), 1, 1, [x])
    ev = s1.record()
    s2.wait(ev)
    y = cpu.zeros(1000)
    s2.launch(observer, 1, 1, [y])
    time.sleep(0.05)
    assert not s2.is_idle(), "the consumer ran before the event it waits for"
    gate.set()
    s2.sync()
    np.testing.assert_array_equal(y.numpy(), np.full(1000, 1.0))
    s1.sync()
    np.testing.assert_array_equal(x.numpy(), np.full(1000, 3.0))


def test_reads_wait_for_pending_python_writes(cpu):
    # No explicit sync: numpy() waits for the kernel (which needs the GIL).
    k, gate = gate_kernel()
    x = cpu.zeros(8)
    s = cpu.stream()
    s.launch(k, 1, 1, [7.0, x])
    threading.Timer(0.1, gate.set).start()
    np.testing.assert_array_equal(x.numpy(), np.full(8, 7.0))


def test_events_made_by_the_context(cpu):
    ev = cpu.event()
    assert ev.query() is True  # nothing captured yet
    s = cpu.stream()
    ev.record(s)
    ev.sync()
    assert repr(ev) == "unigpu.Event()" and "cpu:0" in repr(s)
    assert s.context.backend == "cpu"
    cpu.default_stream.sync()


def test_streams_and_events_on_cuda(cuda, rng):
    s1, s2 = cuda.stream(), cuda.stream()
    # Tens of milliseconds of work on s1 (eight 4096^3 f32 matmuls), which
    # s2 waits for through the event alone: s2 copies arrays of its own.
    m = 4096
    a, b = cuda.array(rng.standard_normal(m * m).astype(np.float32)), cuda.zeros(m * m)
    c = cuda.zeros(m * m)
    zv = rng.standard_normal(1 << 20).astype(np.float32)
    z, w = cuda.array(zv), cuda.zeros(1 << 20)
    s2.ops.copy(z, w)  # any first-launch loading before the timed part
    cuda.sync()
    start = s1.record(timing=True)
    for _ in range(8):
        s1.ops.matmul(a, b, m, m, m, out=c)
    done = s1.record(timing=True)
    s2.wait(done)
    s2.ops.copy(z, w)
    after = s2.record(timing=True)
    after.sync()
    # s2's work is behind the event, so the event is done by now; a wait
    # that did nothing lets `after` finish while the matmuls still run.
    assert done.query() is True, "s2 ran ahead of the event it waits for"
    assert done.elapsed_ms(after) >= 0.0
    assert start.elapsed_ms(done) > 0.0
    np.testing.assert_array_equal(w.numpy(), zv)


def test_many_python_threads(cpu, rng):
    # Python threads share a context, launch Python kernels and ops at once.
    k = unigpu.Kernel.cpu_only("inc", lambda x: x.__iadd__(1), params=["f32*"])
    shared = cpu.zeros(64)
    errors = []

    def work(seed):
        try:
            r = np.random.default_rng(seed)
            s = cpu.stream()
            v = r.standard_normal(500).astype(np.float32)
            a = cpu.array(v)
            for _ in range(20):
                s.launch(k, 1, 1, [a])
                s.ops.scale(1.0, a)
                cpu.launch(k, 1, 1, [shared])
            s.sync()
            np.testing.assert_allclose(a.numpy(), v + 20, rtol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "threads deadlocked"
    assert not errors, errors
    cpu.sync()
    np.testing.assert_array_equal(shared.numpy(), np.full(64, 120.0))


def run_python(code, timeout=60):
    """Runs `code` in a fresh interpreter; a deadlock shows as a timeout."""
    try:
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"deadlock: the subprocess did not finish in {timeout}s:\n{code}")
    assert p.returncode == 0, p.stderr
    return p.stdout


PRELUDE = """
import gc, time, threading, numpy as np, unigpu
ctx = unigpu.Context.new("cpu")
def slow(value, out):
    time.sleep(0.2)     # the worker holds the GIL only while running Python
    out[:] = value
k = unigpu.Kernel.cpu_only("slow", slow, params=["f32", "f32*"])
"""


def test_no_deadlock_waiting_for_python_work():
    out = run_python(PRELUDE + """
x = ctx.zeros(4)
ctx.launch(k, 1, 1, [1.0, x])
ctx.sync()                          # waits with the GIL released
s = ctx.stream()
s.launch(k, 1, 1, [2.0, x])
s.sync()
s.launch(k, 1, 1, [3.0, x])
print(x.numpy().tolist(), unigpu.sum(x))   # reads wait for the Python write
ev = s.record(timing=True); s.launch(k, 1, 1, [4.0, x]); ev2 = s.record(timing=True); ev2.sync()
print(ev.elapsed_ms(ev2) > 100)
""")
    assert out.split("\n")[:2] == ["[3.0, 3.0, 3.0, 3.0] 12.0", "True"]


def test_no_deadlock_dropping_streams_with_python_work():
    out = run_python(PRELUDE + """
x = ctx.zeros(4)
s = ctx.stream()
s.launch(k, 1, 1, [5.0, x])
del s                               # the last Python handle goes with work pending
gc.collect()
c2 = unigpu.Context.new("cpu")
y = c2.zeros(4)
c2.launch(k, 1, 1, [6.0, y])
del c2                              # a whole context
gc.collect()
print(x.numpy().tolist(), y.numpy().tolist())
""")
    assert out.strip() == "[5.0, 5.0, 5.0, 5.0] [6.0, 6.0, 6.0, 6.0]"


def test_no_deadlock_exiting_with_python_work_pending():
    run_python(PRELUDE + """
x = ctx.zeros(4)
for i in range(5):
    ctx.stream().launch(k, 1, 1, [float(i), x])
ctx.launch(k, 1, 1, [9.0, x])
# exit without any sync: the pending work is drained at exit
""")


def test_python_threads_run_while_waiting():
    # While the main thread waits in sync(), another Python thread runs.
    out = run_python(PRELUDE + """
ticks = []
stop = threading.Event()
def ticker():
    while not stop.is_set():
        ticks.append(1); time.sleep(0.01)
t = threading.Thread(target=ticker); t.start()
x = ctx.zeros(1 << 20)
for _ in range(3):
    ctx.launch(k, 1, 1, [1.0, x])
ctx.sync()
stop.set(); t.join()
print(len(ticks) > 10)
""")
    assert out.strip() == "True"


def test_untimed_events_are_refused_by_elapsed_ms(cpu):
    s = cpu.stream()
    untimed, timed = s.record(), s.record(timing=True)
    assert timed.elapsed_ms(s.record(timing=True)) >= 0.0
    with pytest.raises(unigpu.UnsupportedError, match="record_timed"):
        untimed.elapsed_ms(timed)
    ev = cpu.event(timing=True)
    ev.record(s)
    assert timed.elapsed_ms(ev) >= 0.0
