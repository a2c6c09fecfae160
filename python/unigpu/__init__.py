"""unigpu: one safe GPU API, on CUDA when there is a GPU and on a real CPU
backend when there is not.

    import numpy as np, unigpu
    ctx = unigpu.Context()                   # config/env, then torch -> cuda -> vulkan -> cpu
    x = ctx.array(np.random.rand(1000).astype(np.float32))
    y = ctx.zeros(1000, "f32")
    unigpu.axpy(2.0, x, y)                   # y = 2x + y, on ctx's default stream
    print(y.numpy()[:4])

Every call that waits or does real work releases the GIL. Errors from the
backends raise subclasses of ``UnigpuError`` whose message is the Rust
library's. See docs/python.md.
"""

from __future__ import annotations

import atexit as _atexit

from . import _unigpu
from ._unigpu import (
    Array,
    BackendUnavailableError,
    CollectiveError,
    Communicator,
    CompileError,
    ConfigError,
    Context,
    ContextMismatchError,
    DTypeMismatchError,
    DeviceInfo,
    DlpackError,
    DriverError,
    Event,
    Generator,
    Graph,
    ImageError,
    InvalidDeviceError,
    Kernel,
    KernelArgsError,
    Module,
    Ops,
    OutOfMemoryError,
    PinnedBuffer,
    SizeMismatchError,
    Stream,
    StreamWorkError,
    TorchError,
    UnigpuError,
    UnsupportedError,
    __version__,
    abs,
    add,
    argmax,
    argmin,
    axpy,
    backends,
    blocks_for,
    ceil,
    clip,
    copy,
    cos,
    devices,
    divide,
    dot,
    dtypes,
    equal,
    exp,
    fill,
    floor,
    from_dlpack,
    gelu,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    log_softmax,
    matmul,
    max,
    maximum,
    mean,
    min,
    minimum,
    mm,
    mul,
    negative,
    not_equal,
    power,
    relu,
    round,
    rsqrt,
    scale,
    sigmoid,
    silu,
    sin,
    softmax,
    sqrt,
    sub,
    sum,
    tanh,
    where,
)

__all__ = [
    "Array",
    "BackendUnavailableError",
    "CollectiveError",
    "Communicator",
    "CompileError",
    "ConfigError",
    "Context",
    "ContextMismatchError",
    "DeviceInfo",
    "DlpackError",
    "DriverError",
    "DTypeMismatchError",
    "Event",
    "Generator",
    "Graph",
    "ImageError",
    "InvalidDeviceError",
    "Kernel",
    "KernelArgsError",
    "Module",
    "Ops",
    "OutOfMemoryError",
    "PinnedBuffer",
    "SizeMismatchError",
    "Stream",
    "StreamWorkError",
    "TorchError",
    "UnigpuError",
    "UnsupportedError",
    "__version__",
    "abs",
    "add",
    "argmax",
    "argmin",
    "axpy",
    "backends",
    "bf16_to_float32",
    "blocks_for",
    "ceil",
    "clamp",
    "clip",
    "copy",
    "cos",
    "devices",
    "div",
    "divide",
    "dot",
    "dtypes",
    "equal",
    "exp",
    "fill",
    "float32_to_bf16",
    "floor",
    "gelu",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mm",
    "mul",
    "neg",
    "negative",
    "not_equal",
    "pow",
    "power",
    "random",
    "relu",
    "round",
    "rsqrt",
    "scale",
    "sigmoid",
    "silu",
    "sin",
    "softmax",
    "sqrt",
    "sub",
    "sum",
    "tanh",
    "where",
]


from . import random  # noqa: E402  (the submodule needs the names above)

# The Rust API's names for four of numpy's: the same functions.
clamp = clip
div = divide
neg = negative
pow = power  # numpy 2 has the same alias

def bf16_to_float32(bits):
    """bf16 bit patterns (what ``Array.numpy()`` returns for a bf16 array,
    numpy.uint16) as float32 values, exactly."""
    import numpy as np

    bits = np.asarray(bits, dtype=np.uint16)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(values):
    """float32 values rounded to bf16 (to nearest even, as unigpu rounds),
    as numpy.uint16 bit patterns. NaN stays NaN."""
    import numpy as np

    v = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((v + (0x7FFF + ((v >> 16) & 1))) >> 16).astype(np.uint16)
    nan = np.isnan(v.view(np.float32))
    return np.where(nan, ((v >> 16) | 0x40).astype(np.uint16), rounded)


# Streams that still have Python CPU-implementation work queued are waited
# for at exit, while the interpreter still runs threads (their worker needs
# the GIL to finish).
_atexit.register(_unigpu.drain_pending)
