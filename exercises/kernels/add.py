# Your copy of reference/kernels/add.py,
# made by scripts/make_exercises.py with the solution regions replaced by TODOs.
# This file is yours to edit; `python -m learning.check <exercise>` grades it.
# (Maintainers: edit the reference and rerun the script, never this copy.)
"""Elementwise addition: ``out = x + y``.

Spec: ``x`` and ``y`` have the same shape (the registry uses ``M x N``), the same dtype
(float16, bfloat16 or float32) and the same device; both are contiguous. ``out`` has that shape
and dtype. The kernel adds in fp32 and rounds once to the output dtype: for fp16 that is the
same as an fp16 add (the sum of two fp16 values is exact in fp32), it costs nothing in a kernel
bound by memory, and Triton's CPU interpreter has no bf16 arithmetic of its own.

Logical bytes, as the registry counts them: read ``x`` and ``y``, write ``out``:
``3 * M * N * element_size``. No reuse is possible, so the kernel is pure streaming and its
ceiling is the DRAM bandwidth (~4.35 TB/s on an H200 for a tensor larger than its 60 MiB L2).

Design (what the lessons quote):

* **A flat 1-D grid.** The tensors are contiguous, so their 2-D shape does not matter: program
  ``p`` adds elements ``[p * BLOCK, (p + 1) * BLOCK)``. No row index, no per-row masks.
* **Large blocks for large tensors.** In fp16 and bf16, ``BLOCK`` is 16 KiB of each operand
  (8192 elements) with 8 warps: each thread issues four 16-byte loads per operand at once, so
  a resident program has 32 KiB in flight and an SM running several of them keeps enough bytes
  moving to cover DRAM latency (Little's law: ~4.35 TB/s x ~1 us / 132 SMs is ~33 KiB per SM).
  In fp32 it is 4 KiB (1024 elements) with 8 warps, one 16-byte load per operand a thread,
  as torch.compile's own fp32 add launches: timed paired against compile on the H200
  (``results/h200/streaming-plans.log``), 16 KiB fp32 blocks lost 0.3% and 0.2% round after
  round at 16384 x 4096 and 4096 x 32768 and 4 KiB ones won by 0.3-0.4%; in fp16 the same one-vector
  blocks lost 0.5% to 16 KiB ones. Why the two dtypes differ is not settled: the probe timed
  the blocks, it did not profile them.
* **Smaller blocks for small tensors.** 16 KiB blocks cut a 1024 x 1024 fp16 tensor into 128
  programs, fewer than the H200's 132 SMs, and a 1823 x 781 one into 174: most SMs run one
  program and then idle (the first H200 run: 4.3 us where eager PyTorch took 2.1). So the block
  shrinks, down to 2 KiB with 4 warps, until the grid has at least ``MIN_PROGRAMS`` (1024,
  about 8 per SM) programs; a tensor of 16 MiB an operand or more keeps 16 KiB blocks (fp32:
  4 MiB, 4 KiB blocks). At most four block sizes exist, so at most four compiled variants per
  dtype.
* **No mask on full blocks.** The element count is a runtime argument that Triton must not
  specialize (``do_not_specialize``: otherwise a count that is a multiple of 16 and one that is
  not compile two variants). But a mask ``offsets < n_elements`` whose bound has unknown
  divisibility stops the compiler from proving that 8 neighbouring lanes share one mask bit,
  and it falls back to 2-byte loads. So every program but the last takes an unmasked branch
  (full 16-byte vectors); only the tail block is masked.
"""

import torch
import triton
import triton.language as tl

from reference.kernels.row_plan import check_device, check_dtype

BLOCK_BYTES = 16 * 1024  # bytes of each operand one program handles (large tensors)
FP32_BLOCK_BYTES = 4 * 1024  # fp32's large block: one 16-byte vector a thread of 8 warps
MIN_BLOCK_BYTES = 2 * 1024  # the smallest block: 4 warps x 32 threads x one 16-byte vector
MIN_PROGRAMS = 1024  # small tensors shrink the block until the grid has this many programs


@triton.jit(do_not_specialize=["n_elements"])
def _add_kernel(
    x_ptr,  # *Pointer* to the first input, contiguous, n_elements values
    y_ptr,  # *Pointer* to the second input, same layout and dtype
    out_ptr,  # *Pointer* to the output, same layout and dtype
    n_elements,  # runtime: total element count (never specialized, so no recompiles)
    BLOCK: tl.constexpr,  # elements per program, a power of two
):
    # read 2 * n_elements, write n_elements (each element touched exactly once)
    # TODO: add BLOCK elements per program; load without a mask when the block is full
    pass


def choose_block(n_elements: int, element_size: int) -> tuple[int, int]:
    """``(block, num_warps)``: elements per program, and warps, for a tensor of this size.

    The largest power-of-two block from ``MIN_BLOCK_BYTES`` to the dtype's large block
    (``BLOCK_BYTES``, or ``FP32_BLOCK_BYTES`` for 4-byte elements) that still gives
    ``MIN_PROGRAMS`` programs; 8 warps for the large block and for 8 KiB, 4 below.
    """
    largest = FP32_BLOCK_BYTES if element_size == 4 else BLOCK_BYTES
    block_bytes = largest
    while block_bytes > MIN_BLOCK_BYTES and n_elements * element_size < MIN_PROGRAMS * block_bytes:
        block_bytes //= 2
    return block_bytes // element_size, (8 if block_bytes >= min(largest, 8 * 1024) else 4)


def add_fwd(
    x: torch.Tensor, y: torch.Tensor, *, block: int | None = None, num_warps: int | None = None
) -> torch.Tensor:
    """Validate ``x`` and ``y``, allocate the output, launch :func:`_add_kernel`.

    ``block`` and ``num_warps`` override :func:`choose_block` (the tuning script uses them).
    """
    for name, tensor in (("x", x), ("y", y)):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"add: {name} must be a torch.Tensor, got {type(tensor).__name__}")
        check_dtype(tensor, "add", name)
        check_device(tensor, "add", name)
        if not tensor.is_contiguous():
            raise ValueError(f"add: {name} must be contiguous; call .contiguous() first")
    if x.shape != y.shape:
        raise ValueError(
            f"add: x and y must have the same shape, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if x.dtype != y.dtype:
        raise TypeError(f"add: x and y must have the same dtype, got {x.dtype} and {y.dtype}")
    if x.device != y.device:
        raise ValueError(f"add: x and y must be on the same device, got {x.device} and {y.device}")

    out = torch.empty_like(x)
    n_elements = x.numel()
    if n_elements == 0:
        return out
    chosen_block, chosen_warps = choose_block(n_elements, x.element_size())
    block, num_warps = block or chosen_block, num_warps or chosen_warps
    grid = (triton.cdiv(n_elements, block),)
    _add_kernel[grid](x, y, out, n_elements, BLOCK=block, num_warps=num_warps)
    return out


def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``x + y`` for two contiguous tensors of the same shape and dtype."""
    return add_fwd(x, y)
