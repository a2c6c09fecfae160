"""A two-layer MLP trained with SGD on generated data, on whatever backend
unigpu.Context() picks (the Python twin of crates/unigpu/examples/21_mlp.rs).
The loss must fall; the run is repeated on the CPU backend from the same seed
and every step's loss must agree within 2e-3.

    python python/examples/mlp.py
"""

import numpy as np

import unigpu

D, H, C, B, STEPS, LR = 32, 64, 8, 128, 100, 0.5


def batches(seed):
    """Host batches (x, one-hot labels) from a random teacher network."""
    cpu, g = unigpu.Context.cpu(), unigpu.Generator(seed)
    teacher = g.normal(cpu, (D, C))
    for _ in range(STEPS):
        x = g.normal(cpu, (B, D))
        labels = unigpu.argmax(x @ teacher, axis=1).numpy()
        yield x.numpy(), np.eye(C, dtype=np.float32)[labels]


def train(ctx, data, seed):
    g = unigpu.Generator(seed)
    w1, b1 = g.normal(ctx, (D, H), std=(2 / D) ** 0.5), ctx.zeros(H)
    w2, b2 = g.normal(ctx, (H, C), std=(2 / H) ** 0.5), ctx.zeros(C)
    losses = []
    for xh, yh in data:
        x, y = ctx.array(xh), ctx.array(yh)
        z1 = x @ w1 + b1                       # bias added by broadcasting
        h = unigpu.relu(z1)
        logits = h @ w2 + b2
        losses.append(-unigpu.sum(y * unigpu.log_softmax(logits, axis=1)) / B)
        dlogits = (unigpu.softmax(logits, axis=1) - y) * (1.0 / B)
        dz1 = unigpu.where(z1 > 0, dlogits @ w2.T, 0.0)
        for p, grad in ((w1, x.T @ dz1), (b1, unigpu.sum(dz1, axis=0)),
                        (w2, h.T @ dlogits), (b2, unigpu.sum(dlogits, axis=0))):
            unigpu.axpy(-LR, grad, p)           # SGD, in place
    return losses


data = list(batches(2026))
ctx = unigpu.Context()
losses, reference = train(ctx, data, 2026), train(unigpu.Context.cpu(), data, 2026)
print(f"{ctx.backend}: loss {losses[0]:.4f} -> {losses[-1]:.4f} (cpu: {reference[-1]:.4f})")
assert losses[-1] < 0.5 * losses[0], "the loss did not fall"
assert all(abs(a - b) <= 2e-3 * max(abs(b), 1) for a, b in zip(losses, reference))
print("every step within 2e-3 (relative) of the cpu backend's loss")
