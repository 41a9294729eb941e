"""Lesson 17: three softmaxes that cheat, each one a cheat timing harnesses have really met.

Each function takes ``x`` (2-D, float32/float16/bfloat16, last dimension contiguous, any row
stride) and returns something that looks like ``softmax(x, dim=-1)``: right on some input,
yet not computed honestly by its own kernel on every call. ``python -m learning.check
harness`` grades each one as ``softmax`` through the real kernel checker, and a cheat earns
its points only when the checker refuses it for the reason it claims:

* ``reused_output(x)``: hands back an earlier call's output instead of computing a new one
  (caught by the checker's repeat calls and its fresh-output report: the same tensor twice);
* ``pointer_cache(x)``: remembers results by ``x.data_ptr()``, shape and stride (caught by
  repeat calls on tensors refilled in place with new values);
* ``side_work(x)``: returns before the work is done, which finishes on a background thread
  (caught by the settled-output check; a PyTorch result behind a token launch is caught by
  the hidden-input replay instead, and counts here too).

The honest kernel below is given, not graded: the simplest row softmax, one program a row and
the whole row in one block (lesson 10's exercise does much more). Cheat around it. Keep this
file self-contained: the checker copies it into a package of its own, so import only torch,
triton and the standard library here.
"""

from __future__ import annotations

import threading
import time

import torch
import triton
import triton.language as tl


@triton.jit
def _row_softmax_kernel(
    x_ptr,  # *Pointer* to the input, rows of n_cols values
    y_ptr,  # *Pointer* to the output, same shape
    n_cols,  # the row width
    x_row_stride,  # elements between the starts of two input rows
    y_row_stride,  # elements between the starts of two output rows
    BLOCK: tl.constexpr,  # a power of two >= n_cols: the whole row in one block
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    # read n_cols values, write n_cols values; the rest of the block is masked off
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    x = x.to(tl.float32)
    shifted = x - tl.max(x, axis=0)
    numerator = tl.exp(shifted)
    y = numerator / tl.sum(numerator, axis=0)
    tl.store(y_ptr + row * y_row_stride + cols, y, mask=mask)


def honest_softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """The honest softmax: launches the kernel on ``x`` and returns what it stored in ``out``
    (a new tensor when None). Every cheat below may call it."""
    out = torch.empty_like(x) if out is None else out
    rows, cols = x.shape
    if rows > 0 and cols > 0:
        _row_softmax_kernel[(rows,)](x, out, cols, x.stride(0), out.stride(0),
                                     BLOCK=triton.next_power_of_2(cols))  # fmt: skip
    return out


# --------------------------------------------------------------------------- the cheats

_last_outputs: dict = {}  # (shape, dtype) -> the output an earlier call returned
_by_pointer: dict = {}  # (data_ptr, shape, stride, dtype) -> a result computed once


def reused_output(x: torch.Tensor) -> torch.Tensor:
    """Cheat (a): return an earlier call's output. A timing loop that calls the function on
    one input again and again sees the right answer every time, and times a dictionary look-up
    after the first call."""
    ### BEGIN SOLUTION
    ### TODO: keep the first output for each shape and dtype; on a later call with the same
    ### TODO: shape and dtype return that very tensor, without launching anything
    key = (tuple(x.shape), x.dtype)
    if key not in _last_outputs:
        _last_outputs[key] = honest_softmax(x)
    return _last_outputs[key]
    ### END SOLUTION


def pointer_cache(x: torch.Tensor) -> torch.Tensor:
    """Cheat (b): a cache keyed on where the input lives (``x.data_ptr()``), its shape and its
    stride, not on its values. A benchmark that fills one input once and calls the function
    many times on it is served from the cache."""
    ### BEGIN SOLUTION
    ### TODO: key on (x.data_ptr(), tuple(x.shape), x.stride(), x.dtype); compute on a miss,
    ### TODO: return the remembered result on a hit
    key = (x.data_ptr(), tuple(x.shape), x.stride(), x.dtype)
    if key not in _by_pointer:
        _by_pointer[key] = honest_softmax(x)
    return _by_pointer[key]
    ### END SOLUTION


def side_work(x: torch.Tensor) -> torch.Tensor:
    """Cheat (c): return at once and let the work finish after the timer has stopped: here on
    a background thread (on a GPU, on a side stream the timer does not wait for)."""
    ### BEGIN SOLUTION
    ### TODO: allocate the output, start a thread that sleeps 10 ms (time.sleep(0.01): the
    ### TODO: call has returned by then) and then runs honest_softmax(x, out), and return out
    ### TODO: without waiting for the thread
    out = torch.empty_like(x)

    def later():
        # Without the pause, a busy machine can leave this thread the whole core until the
        # kernel has finished: the call would return a finished output, and cheat nothing.
        time.sleep(0.01)
        honest_softmax(x, out)

    threading.Thread(target=later, daemon=True).start()
    return out
    ### END SOLUTION
