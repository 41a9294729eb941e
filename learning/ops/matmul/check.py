"""What the kernel checker reads about ``matmul``, besides its spec (no run imports this
module; ``learning.check.op_data`` says what the checker asks of it). The training step reads
its operands' layouts from here (``learning.ops.matmul_train.check``).

* a and b may have rows further apart than their width: the last dimension contiguous, any
  row stride.
* **Transposed operands.** Given as ``a.T`` or ``b.T`` views (column-major memory), an operand
  takes the kernel's strides out of the usual order: the checker draws such inputs too.
* **The typical mistakes**, each as the mistaken kernel computes it, in float64: A or B read
  transposed (where the sizes allow it), and the K loop's last, partial step dropped (tried
  at 16 to 128 a step).
"""

from __future__ import annotations

import torch

STRIDED = ("a", "b")
TRANSPOSED = {
    "name": "transposed operands",
    "what": "transposed operands (a.T or b.T views: column-major memory)",
    "shape": lambda rng: tuple(rng.randint(2, 48) for _ in "mnk"),
    "transposed": True,
}
PATHS = (TRANSPOSED,)


def mistakes(inputs: dict, dtype: torch.dtype):
    a, b = inputs["a"], inputs["b"]
    m, k = a.shape
    n = b.shape[1]
    if m == k:
        yield "output", a.T @ b, "the output matches A^T @ B: A was read transposed"
    if k == n:
        yield "output", a @ b.T, "the output matches A @ B^T: B was read transposed"
    for block_k in (16, 32, 64, 128):
        kept = k - k % block_k
        if 0 < kept < k:
            yield (
                "output",
                a[:, :kept] @ b[:kept],
                f"the output matches A @ B over only the first {kept} of K={k}: the K loop "
                f"dropped the last {k - kept}. Loop to cdiv(K, BLOCK_K) and mask the loads "
                f"with offs_k < K - k * BLOCK_K",
            )
