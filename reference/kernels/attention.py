"""Attention, forward and backward: ``attention(q, k, v, causal)`` is softmax(q k^T / sqrt(D)) v.

Spec: ``q``, ``k`` and ``v`` are ``B x H x N x D`` (float16, bfloat16 or float32, the same one;
``D`` 64 or 128), on the kernels' device, any strides (a tensor whose last dimension is not
contiguous is copied first). The output ``o`` has their shape and dtype. Row ``i`` of a head is
``o[i] = sum_j softmax_j(q[i] . k[j] / sqrt(D)) v[j]`` over every key ``j``, or over
``j <= i`` when ``causal``. Scores, sums and products accumulate in fp32; the probabilities
(and in the backward ``dS``) are rounded to the inputs' dtype for the products that take them,
as the tensor cores do, and each output is rounded once.

Backward (``torch.autograd``): with ``P`` the probabilities and ``dO`` the gradient of ``o``,
``dv = P^T dO``, ``dP = dO v^T``, ``dS = P * (dP - D_i)`` where ``D_i = rowsum(dO * o)`` (the
softmax's Jacobian: ``sum_j P_ij dP_ij`` is ``dO_i . o_i``), ``dq = dS k / sqrt(D)`` and
``dk = dS^T q / sqrt(D)``.

Logical bytes, as the registry counts them: forward reads q, k, v and writes o
(``4 B H N D * element_size``); training adds the log-sum-exp of each row (fp32), written by the
forward and read by the backward, and the backward's reads of q, k, v, o, dO and writes of dq,
dk, dv. ``4 B H N^2 D`` FLOPs forward, half of them when causal.

Design (what the lessons quote):

* **Tiles of keys, an online softmax (the forward).** A program owns ``BLOCK_M`` query rows of
  one head and walks the head's keys ``BLOCK_N`` at a time: ``S = q k^T`` for the tile, then
  lesson 10's running maximum and sum, with one more running quantity, the output ``acc``.
  When a tile raises a row's maximum from ``m`` to ``m'``, everything accumulated so far was
  weighted by ``exp(s - m)`` and must now be weighted by ``exp(s - m')``: the row's sum and its
  ``acc`` are both multiplied by ``exp(m - m')`` before the tile's ``P v`` is added. After the
  last tile ``o = acc / sum``. The scores live one tile at a time in registers: nothing of
  size N x N exists anywhere, and each tile of K and V is read once per program (from L2
  after the head's first program reads it).
* **The log-sum-exp is the forward's one extra output.** ``lse_i = m_i + log(sum_i)``
  (fp32, one value a row, natural log) is all the backward needs to recompute any tile of
  probabilities exactly: ``P = exp(S / sqrt(D) - lse)``. Saved in 16 bits it would not be:
  an lse near 9 (4096 keys of unit-variance scores) rounds by up to 2^-8 in fp16 and 2^-5 in
  bf16, which multiplies every probability of its row by up to 1.004 or 1.03.
* **Base 2.** ``exp(x) = exp2(x * log2(e))``, and ``exp2`` is one instruction (``ex2``). The
  softmax scale and ``log2(e)`` are one factor, ``qk_scale``, applied to each score as it
  leaves the product; the running maximum is kept in those units.
* **Causal: tiles above the diagonal are never visited.** Query block ``[m0, m0 + BLOCK_M)``
  sees keys ``< m0`` whole (no mask: every one is visible to every row of the block) and
  then the block's own keys, where the triangle is masked. The key loop stops at the
  diagonal: a causal forward does half the work (``tests/reference/test_attention.py`` counts
  the rows of k and v each program loads). Masks are only where they change something: the
  diagonal, and the last, partial tile when N is not a multiple of the block (at N = 4097 a
  program masks one of its 65 tiles, not all of them). ``BLOCK_M`` is a multiple of
  ``BLOCK_N``, so the diagonal starts on a tile boundary.
* **The backward recomputes, in two passes.** The gradients of a query row need every key
  (``dq_i = sum_j dS_ij k_j``) and those of a key every query row (``dk_j = sum_i dS_ij q_i``).
  A program can accumulate one or the other in registers, not both without atomics, so the
  backward is two kernels, each recomputing ``P`` from q, k and the lse. (FlashAttention-2's
  backward is one pass over key blocks that adds each ``dq`` tile into memory with atomics:
  the order of those additions, and so the last bits of dq, change from run to run, and the
  checker asks for a deterministic kernel.)

  - ``_attention_bwd_dq_kernel``: one program a query block, walking key tiles as the
    forward does (same stages, same causal stop), accumulating ``dq``. It first computes
    ``D_i = rowsum(dO * o)`` for its rows, from o and dO it loads anyway, and stores it: the
    separate pre-processing kernel that FlashAttention-2 runs for ``D`` would read o and dO
    once more and cost a launch.
  - ``_attention_bwd_dkdv_kernel``, after it: one program a block of keys, walking query
    tiles, accumulating ``dk`` and ``dv``; causal programs start at the diagonal (a key is
    seen by the query rows at and after it).

  The price of the split is one more ``q k^T`` and one more ``dO v^T`` per tile (seven
  products instead of five); what it buys is no atomics and no N x N buffer.
* **Block sizes, warps and stages follow one rule** (:func:`plan`), from the Hopper budget of
  a program: registers for the fp32 tiles, shared memory for the pipelined K and V tiles.
  ``BLOCK_M = 128`` query rows on 8 warps (two warp groups of wgmma, 16 rows a warp). The
  forward holds ``acc`` (``BLOCK_M x D`` fp32) and one score tile (``BLOCK_M x BLOCK_N``
  fp32): ``BLOCK_N = 8192 / D`` keeps the two at 96 registers a thread at either D (acc 64 +
  scores 32 at D = 128, 32 + 64 at D = 64), and a K or V tile at 16 KiB, so three stages of
  both (96 KiB) and the q tile fit the 227 KiB of shared memory. The dq pass holds two score
  tiles (P and dP), so its key step halves: ``4096 / D``. The dk/dv pass holds two
  ``BLOCK_N x D`` fp32 accumulators: ``8192 / D`` keys a program (64 registers a thread), and
  query steps of ``4096 / BLOCK_N`` rows. These are arithmetic, not yet timings: the rule is
  the place a measured sweep will change. fp32 (a correctness path, no tensor cores) runs
  64 x 32 tiles on 4 warps at either D.
* **64-bit offsets.** The start of a head is ``b * stride_b + h * stride_h``, which passes
  2^31 elements once ``B H N D`` does (16 x 32 x 32768 x 128, 4 GiB of fp16 a tensor): it is
  computed in int64, as is every row offset.
* **Under the interpreter** small tiles run (32 query rows, 16 keys) so that the CPU shapes
  (N = 67, 129) cross several tiles, the diagonal and a ragged tail, and bfloat16 tiles are
  upcast to fp32 before ``tl.dot``, as in ``matmul.py`` (the interpreter's bf16 ``tl.dot`` is
  wrong). Compiled, P and dS are rounded to the inputs' 16-bit type for the tensor cores:
  the rounding the op's tolerances are made for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from learning.runtime import default_device, interpreting

SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
HEAD_DIMS = (64, 128)
LOG2E: tl.constexpr = 1.4426950408889634  # log2(e): exp(x) = exp2(x * LOG2E)
LN2: tl.constexpr = 0.6931471805599453  # log(2): log(x) = log2(x) * LN2


# --------------------------------------------------------------------------- the forward


@triton.jit
def _forward_tiles(
    acc,  # [BLOCK_M, HEAD_DIM] fp32: the rows' running sum of exp(s - row_max) * v
    row_sum,  # [BLOCK_M] fp32: the rows' running sum of exp(s - row_max)
    row_max,  # [BLOCK_M] fp32: the rows' largest score so far, in exp2 units (-inf: none yet)
    q,  # [BLOCK_M, HEAD_DIM] the program's query rows
    k_head,  # *Pointer* to key 0 of this head
    v_head,  # *Pointer* to value row 0 of this head
    stride_kn,  # elements between consecutive keys
    stride_vn,  # elements between consecutive value rows
    rows,  # [BLOCK_M] the query rows' indices (for the causal mask)
    key_start,  # first key of the walk, a multiple of BLOCK_N
    key_stop,  # one past its last key
    n,  # N: keys past it are masked (MASKED only)
    qk_scale,  # 1 / sqrt(D) * log2(e)
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_N: tl.constexpr,  # keys a tile
    MASKED: tl.constexpr,  # mask keys >= n, and above the diagonal when CAUSAL
    CAUSAL: tl.constexpr,  # (MASKED only) query row i sees keys j <= i
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_N x D of K and of V a tile; the scores never leave registers
    ### BEGIN SOLUTION
    ### TODO: for each tile of keys: the scores q k^T (times qk_scale), masked when MASKED; the
    ### TODO: new row maximum; rescale row_sum and acc by exp2(old max - new max); add the
    ### TODO: tile's exp2(s - new max) to row_sum and its product with v to acc
    dims = tl.arange(0, HEAD_DIM)
    for key_block in tl.range(key_start, key_stop, BLOCK_N):
        keys = key_block + tl.arange(0, BLOCK_N)
        k_tile = k_head + keys.to(tl.int64)[:, None] * stride_kn + dims[None, :]
        v_tile = v_head + keys.to(tl.int64)[:, None] * stride_vn + dims[None, :]
        if MASKED:  # keys past N read as 0: a NaN in memory there would reach acc through 0 * v
            k = tl.load(k_tile, mask=(keys < n)[:, None], other=0.0)
            v = tl.load(v_tile, mask=(keys < n)[:, None], other=0.0)
        else:
            k = tl.load(k_tile)
            v = tl.load(v_tile)
        if DOT_IN_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        scores = tl.dot(q, tl.trans(k), input_precision=INPUT_PRECISION) * qk_scale
        if MASKED:
            visible = (keys < n)[None, :]
            if CAUSAL:
                visible = visible & (keys[None, :] <= rows[:, None])
            scores = tl.where(visible, scores, float("-inf"))
        # Every row sees at least one key of its first tile (key 0, or its own), so new_max is
        # finite and no row computes -inf - -inf.
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        p = tl.exp2(scores - new_max[:, None])
        rescale = tl.exp2(row_max - new_max)  # exp2(-inf) = 0 before the first tile
        row_sum = row_sum * rescale + tl.sum(p, axis=1)
        acc = acc * rescale[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=INPUT_PRECISION)
        row_max = new_max
    ### END SOLUTION
    return acc, row_sum, row_max


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_fwd_kernel(
    q_ptr,  # *Pointer* to q, B x H x N x D, last dimension contiguous
    k_ptr,  # *Pointer* to k, B x H x N x D, last dimension contiguous
    v_ptr,  # *Pointer* to v, B x H x N x D, last dimension contiguous
    o_ptr,  # *Pointer* to the output, B x H x N x D contiguous, q's dtype
    lse_ptr,  # *Pointer* to the log-sum-exp of each row's scores, B x H x N contiguous, fp32
    stride_qb, stride_qh, stride_qn,  # q's strides in elements (batch, head, row)
    stride_kb, stride_kh, stride_kn,  # k's
    stride_vb, stride_vh, stride_vn,  # v's
    heads,  # runtime: H (program_id(1) is batch * H + head)
    n,  # runtime: N, the sequence length (never specialized: a new length reuses the binary)
    qk_scale,  # 1 / sqrt(D) * log2(e): scores in exp2 units
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_M: tl.constexpr,  # query rows a program
    BLOCK_N: tl.constexpr,  # keys a tile; divides BLOCK_M
    CAUSAL: tl.constexpr,  # query row i sees keys j <= i
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_M x D of q, then every visible tile of k and v (from L2 after the head's first
    # program); write BLOCK_M x D of o and BLOCK_M log-sum-exps
    ### BEGIN SOLUTION
    ### TODO: load the program's query rows; walk the keys in stages (causal: the keys before
    ### TODO: the block unmasked, then the diagonal masked; else: the whole tiles unmasked,
    ### TODO: then the ragged tail masked) with _forward_tiles; store o = acc / row_sum and
    ### TODO: the natural-log log-sum-exp (row_max + log2(row_sum)) * ln 2 in fp32
    first_row = tl.program_id(axis=0) * BLOCK_M
    head_index = tl.program_id(axis=1)
    batch = (head_index // heads).to(tl.int64)  # int64: the start of a head passes 2**31
    head = (head_index % heads).to(tl.int64)
    q_head = q_ptr + batch * stride_qb + head * stride_qh
    k_head = k_ptr + batch * stride_kb + head * stride_kh
    v_head = v_ptr + batch * stride_vb + head * stride_vh
    rows = first_row + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    row_mask = (rows < n)[:, None]
    q = tl.load(q_head + rows.to(tl.int64)[:, None] * stride_qn + dims[None, :], mask=row_mask,
                other=0.0)  # fmt: skip
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    if CAUSAL:
        whole_stop = first_row  # every key before the block is visible to all its rows
        masked_stop = tl.minimum(first_row + BLOCK_M, n)  # the diagonal tiles
    else:
        whole_stop = n - n % BLOCK_N  # the tiles wholly inside N
        masked_stop = n  # the ragged tail, if any
    acc, row_sum, row_max = _forward_tiles(
        acc, row_sum, row_max, q, k_head, v_head, stride_kn, stride_vn, rows, 0, whole_stop,
        n, qk_scale, HEAD_DIM, BLOCK_N, False, False, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    acc, row_sum, row_max = _forward_tiles(
        acc, row_sum, row_max, q, k_head, v_head, stride_kn, stride_vn, rows, whole_stop,
        masked_stop, n, qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    out = acc / row_sum[:, None]
    head_rows = head_index.to(tl.int64) * n + rows  # o and lse are contiguous
    tl.store(o_ptr + head_rows[:, None] * HEAD_DIM + dims[None, :],
             out.to(o_ptr.dtype.element_ty), mask=row_mask)  # fmt: skip
    tl.store(lse_ptr + head_rows, (row_max + tl.log2(row_sum)) * LN2,
             mask=rows < n)  # fmt: skip
    ### END SOLUTION


# --------------------------------------------------------------------------- the backward


@triton.jit
def _dq_tiles(
    dq,  # [BLOCK_M, HEAD_DIM] fp32: the rows' running sum of dS k
    q,  # [BLOCK_M, HEAD_DIM] the program's query rows
    do,  # [BLOCK_M, HEAD_DIM] their output gradients
    lse,  # [BLOCK_M] fp32: their log-sum-exps, in exp2 units (times log2(e))
    delta,  # [BLOCK_M] fp32: their D_i = rowsum(dO * o)
    k_head,  # *Pointer* to key 0 of this head
    v_head,  # *Pointer* to value row 0 of this head
    stride_kn,  # elements between consecutive keys
    stride_vn,  # elements between consecutive value rows
    rows,  # [BLOCK_M] the query rows' indices (for the causal mask)
    key_start,  # first key of the walk, a multiple of BLOCK_N
    key_stop,  # one past its last key
    n,  # N: keys past it are masked (MASKED only)
    qk_scale,  # 1 / sqrt(D) * log2(e)
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_N: tl.constexpr,  # keys a tile
    MASKED: tl.constexpr,  # mask keys >= n, and above the diagonal when CAUSAL
    CAUSAL: tl.constexpr,  # (MASKED only) query row i sees keys j <= i
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_N x D of K and of V a tile
    ### BEGIN SOLUTION
    ### TODO: for each tile of keys: P = exp2(q k^T * qk_scale - lse) (zero where masked),
    ### TODO: dP = dO v^T, dS = P * (dP - delta), dq += dS k
    dims = tl.arange(0, HEAD_DIM)
    for key_block in tl.range(key_start, key_stop, BLOCK_N):
        keys = key_block + tl.arange(0, BLOCK_N)
        k_tile = k_head + keys.to(tl.int64)[:, None] * stride_kn + dims[None, :]
        v_tile = v_head + keys.to(tl.int64)[:, None] * stride_vn + dims[None, :]
        if MASKED:
            k = tl.load(k_tile, mask=(keys < n)[:, None], other=0.0)
            v = tl.load(v_tile, mask=(keys < n)[:, None], other=0.0)
        else:
            k = tl.load(k_tile)
            v = tl.load(v_tile)
        if DOT_IN_FP32:
            k = k.to(tl.float32)
            v = v.to(tl.float32)
        scores = tl.dot(q, tl.trans(k), input_precision=INPUT_PRECISION)
        p = tl.exp2(scores * qk_scale - lse[:, None])
        if MASKED:
            visible = (keys < n)[None, :]
            if CAUSAL:
                visible = visible & (keys[None, :] <= rows[:, None])
            p = tl.where(visible, p, 0.0)
        dp = tl.dot(do, tl.trans(v), input_precision=INPUT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=INPUT_PRECISION)
    ### END SOLUTION
    return dq


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_bwd_dq_kernel(
    q_ptr,  # *Pointer* to q, B x H x N x D, last dimension contiguous
    k_ptr,  # *Pointer* to k, B x H x N x D, last dimension contiguous
    v_ptr,  # *Pointer* to v, B x H x N x D, last dimension contiguous
    o_ptr,  # *Pointer* to the forward's output, B x H x N x D contiguous
    do_ptr,  # *Pointer* to the output's gradient dO, B x H x N x D contiguous, q's dtype
    lse_ptr,  # *Pointer* to the forward's log-sum-exps, B x H x N contiguous, fp32
    dq_ptr,  # *Pointer* to dq (written), B x H x N x D contiguous, q's dtype
    delta_ptr,  # *Pointer* to D_i = rowsum(dO * o) (written), B x H x N contiguous, fp32
    stride_qb, stride_qh, stride_qn,  # q's strides in elements (batch, head, row)
    stride_kb, stride_kh, stride_kn,  # k's
    stride_vb, stride_vh, stride_vn,  # v's
    heads,  # runtime: H (program_id(1) is batch * H + head)
    n,  # runtime: N, the sequence length
    sm_scale,  # 1 / sqrt(D)
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_M: tl.constexpr,  # query rows a program
    BLOCK_N: tl.constexpr,  # keys a tile; divides BLOCK_M
    CAUSAL: tl.constexpr,  # query row i sees keys j <= i
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_M x D of q, o and dO and BLOCK_M lses, then every visible tile of k and v;
    # write BLOCK_M x D of dq and BLOCK_M deltas
    ### BEGIN SOLUTION
    ### TODO: load the program's rows of q, dO and o; compute and store delta = rowsum(dO * o)
    ### TODO: in fp32; walk the keys in the forward's stages with _dq_tiles; store dq * sm_scale
    first_row = tl.program_id(axis=0) * BLOCK_M
    head_index = tl.program_id(axis=1)
    batch = (head_index // heads).to(tl.int64)
    head = (head_index % heads).to(tl.int64)
    q_head = q_ptr + batch * stride_qb + head * stride_qh
    k_head = k_ptr + batch * stride_kb + head * stride_kh
    v_head = v_ptr + batch * stride_vb + head * stride_vh
    rows = first_row + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    row_mask = (rows < n)[:, None]
    head_rows = head_index.to(tl.int64) * n + rows  # o, dO, dq, lse and delta are contiguous
    dense = head_rows[:, None] * HEAD_DIM + dims[None, :]
    q = tl.load(q_head + rows.to(tl.int64)[:, None] * stride_qn + dims[None, :], mask=row_mask,
                other=0.0)  # fmt: skip
    do = tl.load(do_ptr + dense, mask=row_mask, other=0.0)
    o = tl.load(o_ptr + dense, mask=row_mask, other=0.0)
    delta = tl.sum(do.to(tl.float32) * o.to(tl.float32), axis=1)
    tl.store(delta_ptr + head_rows, delta, mask=rows < n)
    lse = tl.load(lse_ptr + head_rows, mask=rows < n, other=0.0) * LOG2E
    if DOT_IN_FP32:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    qk_scale = sm_scale * LOG2E
    if CAUSAL:
        whole_stop = first_row
        masked_stop = tl.minimum(first_row + BLOCK_M, n)
    else:
        whole_stop = n - n % BLOCK_N
        masked_stop = n
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    dq = _dq_tiles(
        dq, q, do, lse, delta, k_head, v_head, stride_kn, stride_vn, rows, 0, whole_stop, n,
        qk_scale, HEAD_DIM, BLOCK_N, False, False, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    dq = _dq_tiles(
        dq, q, do, lse, delta, k_head, v_head, stride_kn, stride_vn, rows, whole_stop,
        masked_stop, n, qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    tl.store(dq_ptr + dense, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=row_mask)
    ### END SOLUTION


@triton.jit
def _dkdv_tiles(
    dk,  # [BLOCK_N, HEAD_DIM] fp32: the keys' running sum of dS^T q
    dv,  # [BLOCK_N, HEAD_DIM] fp32: the keys' running sum of P^T dO
    k,  # [BLOCK_N, HEAD_DIM] the program's keys
    v,  # [BLOCK_N, HEAD_DIM] their value rows
    keys,  # [BLOCK_N] the keys' indices (for the causal mask)
    q_head,  # *Pointer* to query row 0 of this head
    stride_qn,  # elements between consecutive query rows
    do_head,  # *Pointer* to dO's row 0 of this head (contiguous, rows HEAD_DIM apart)
    lse_head,  # *Pointer* to this head's log-sum-exps (natural log)
    delta_head,  # *Pointer* to this head's D_i
    row_start,  # first query row of the walk, a multiple of BLOCK_M
    row_stop,  # one past its last row
    n,  # N: query rows past it are masked (MASKED only)
    qk_scale,  # 1 / sqrt(D) * log2(e)
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_M: tl.constexpr,  # query rows a tile
    MASKED: tl.constexpr,  # mask rows >= n, and rows above the diagonal when CAUSAL
    CAUSAL: tl.constexpr,  # (MASKED only) key j is seen by query rows i >= j
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_M x D of q and of dO and BLOCK_M lses and deltas a tile
    ### BEGIN SOLUTION
    ### TODO: for each tile of query rows, transposed (keys x rows): P^T = exp2(k q^T *
    ### TODO: qk_scale - lse) (zero where masked), dv += P^T dO, dP^T = v dO^T,
    ### TODO: dS^T = P^T * (dP^T - delta), dk += dS^T q
    dims = tl.arange(0, HEAD_DIM)
    for row_block in tl.range(row_start, row_stop, BLOCK_M):
        rows = row_block + tl.arange(0, BLOCK_M)
        q_tile = q_head + rows.to(tl.int64)[:, None] * stride_qn + dims[None, :]
        do_tile = do_head + rows.to(tl.int64)[:, None] * HEAD_DIM + dims[None, :]
        if MASKED:
            q = tl.load(q_tile, mask=(rows < n)[:, None], other=0.0)
            do = tl.load(do_tile, mask=(rows < n)[:, None], other=0.0)
            lse = tl.load(lse_head + rows, mask=rows < n, other=0.0)
            delta = tl.load(delta_head + rows, mask=rows < n, other=0.0)
        else:
            q = tl.load(q_tile)
            do = tl.load(do_tile)
            lse = tl.load(lse_head + rows)
            delta = tl.load(delta_head + rows)
        if DOT_IN_FP32:
            q = q.to(tl.float32)
            do = do.to(tl.float32)
        scores_t = tl.dot(k, tl.trans(q), input_precision=INPUT_PRECISION)
        p_t = tl.exp2(scores_t * qk_scale - lse[None, :] * LOG2E)
        if MASKED:
            visible = (rows < n)[None, :]
            if CAUSAL:
                visible = visible & (rows[None, :] >= keys[:, None])
            p_t = tl.where(visible, p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=INPUT_PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=INPUT_PRECISION)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=INPUT_PRECISION)
    ### END SOLUTION
    return dk, dv


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_bwd_dkdv_kernel(
    q_ptr,  # *Pointer* to q, B x H x N x D, last dimension contiguous
    k_ptr,  # *Pointer* to k, B x H x N x D, last dimension contiguous
    v_ptr,  # *Pointer* to v, B x H x N x D, last dimension contiguous
    do_ptr,  # *Pointer* to the output's gradient dO, B x H x N x D contiguous, q's dtype
    lse_ptr,  # *Pointer* to the forward's log-sum-exps, B x H x N contiguous, fp32
    delta_ptr,  # *Pointer* to D_i from the dq pass, B x H x N contiguous, fp32
    dk_ptr,  # *Pointer* to dk (written), B x H x N x D contiguous, q's dtype
    dv_ptr,  # *Pointer* to dv (written), B x H x N x D contiguous, q's dtype
    stride_qb, stride_qh, stride_qn,  # q's strides in elements (batch, head, row)
    stride_kb, stride_kh, stride_kn,  # k's
    stride_vb, stride_vh, stride_vn,  # v's
    heads,  # runtime: H (program_id(1) is batch * H + head)
    n,  # runtime: N, the sequence length
    sm_scale,  # 1 / sqrt(D)
    HEAD_DIM: tl.constexpr,  # D
    BLOCK_M: tl.constexpr,  # query rows a tile; divides BLOCK_N
    BLOCK_N: tl.constexpr,  # keys a program
    CAUSAL: tl.constexpr,  # key j is seen by query rows i >= j
    DOT_IN_FP32: tl.constexpr,  # upcast tiles before tl.dot (interpreter, bf16 only)
    INPUT_PRECISION: tl.constexpr,  # "ieee" for fp32 operands (no TF32); ignored for 16-bit
):
    # read BLOCK_N x D of k and v, then every tile of query rows that sees them (q, dO, lse,
    # delta; from L2 after the head's first program); write BLOCK_N x D of dk and of dv
    ### BEGIN SOLUTION
    ### TODO: load the program's keys and value rows; walk the query rows that see them (causal:
    ### TODO: the diagonal masked from the block's first key, then the rows below unmasked, then
    ### TODO: the ragged tail masked; else: whole tiles, then the tail) with _dkdv_tiles; store
    ### TODO: dk * sm_scale and dv
    first_key = tl.program_id(axis=0) * BLOCK_N
    head_index = tl.program_id(axis=1)
    batch = (head_index // heads).to(tl.int64)
    head = (head_index % heads).to(tl.int64)
    q_head = q_ptr + batch * stride_qb + head * stride_qh
    k_head = k_ptr + batch * stride_kb + head * stride_kh
    v_head = v_ptr + batch * stride_vb + head * stride_vh
    do_head = do_ptr + head_index.to(tl.int64) * n * HEAD_DIM
    lse_head = lse_ptr + head_index.to(tl.int64) * n
    delta_head = delta_ptr + head_index.to(tl.int64) * n
    keys = first_key + tl.arange(0, BLOCK_N)
    dims = tl.arange(0, HEAD_DIM)
    key_mask = (keys < n)[:, None]
    k = tl.load(k_head + keys.to(tl.int64)[:, None] * stride_kn + dims[None, :], mask=key_mask,
                other=0.0)  # fmt: skip
    v = tl.load(v_head + keys.to(tl.int64)[:, None] * stride_vn + dims[None, :], mask=key_mask,
                other=0.0)  # fmt: skip
    if DOT_IN_FP32:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    qk_scale = sm_scale * LOG2E
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    whole_start = 0
    if CAUSAL:  # rows before the block see none of its keys: start at the diagonal
        whole_start = tl.minimum(first_key + BLOCK_N, n)
        dk, dv = _dkdv_tiles(
            dk, dv, k, v, keys, q_head, stride_qn, do_head, lse_head, delta_head, first_key,
            whole_start, n, qk_scale, HEAD_DIM, BLOCK_M, True, True, DOT_IN_FP32,
            INPUT_PRECISION,
        )  # fmt: skip
    whole_stop = tl.maximum(whole_start, n - n % BLOCK_M)  # the tiles wholly inside N
    dk, dv = _dkdv_tiles(
        dk, dv, k, v, keys, q_head, stride_qn, do_head, lse_head, delta_head, whole_start,
        whole_stop, n, qk_scale, HEAD_DIM, BLOCK_M, False, False, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    dk, dv = _dkdv_tiles(
        dk, dv, k, v, keys, q_head, stride_qn, do_head, lse_head, delta_head, whole_stop, n, n,
        qk_scale, HEAD_DIM, BLOCK_M, True, False, DOT_IN_FP32, INPUT_PRECISION,
    )  # fmt: skip
    head_keys = head_index.to(tl.int64) * n + keys  # dk and dv are contiguous
    dense = head_keys[:, None] * HEAD_DIM + dims[None, :]
    tl.store(dk_ptr + dense, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=key_mask)
    tl.store(dv_ptr + dense, dv.to(dv_ptr.dtype.element_ty), mask=key_mask)
    ### END SOLUTION


# --------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class TilePlan:
    """One kernel's tiles: ``block_m`` query rows by ``block_n`` keys, on ``num_warps`` warps,
    its tile loop pipelined ``num_stages`` deep."""

    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


@dataclass(frozen=True)
class AttentionPlan:
    forward: TilePlan  # a program: block_m query rows; a step: block_n keys
    dq: TilePlan  # the same
    dkdv: TilePlan  # a program: block_n keys; a step: block_m query rows


def plan(head_dim: int, dtype: torch.dtype) -> AttentionPlan:
    """The tiles of the three kernels for a head dimension and dtype (the module docstring's
    rule): never the sequence length, so a new N compiles nothing."""
    if interpreting():  # small tiles: the CPU shapes cross several of them
        return AttentionPlan(TilePlan(32, 16, 4, 1), TilePlan(32, 16, 4, 1), TilePlan(16, 32, 4, 1))
    if dtype == torch.float32:  # IEEE products on the FMA units: a correctness path
        return AttentionPlan(TilePlan(64, 32, 4, 2), TilePlan(64, 32, 4, 2), TilePlan(32, 64, 4, 2))
    keys = 8192 // head_dim  # a 16 KiB tile of K or V; the fp32 tiles at 96 registers a thread
    return AttentionPlan(
        forward=TilePlan(128, keys, 8, 3),
        dq=TilePlan(128, keys // 2, 8, 3),  # P and dP: two score tiles, so half the keys
        dkdv=TilePlan(4096 // keys, keys, 8, 3),  # dk and dv: two accumulators of keys x D
    )


# --------------------------------------------------------------------------- launchers


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _check(q: object, k: object, v: object) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"attention: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"attention: {name} must be B x H x N x D, got shape {tuple(t.shape)}")
        if t.device.type != default_device():
            raise ValueError(
                f"attention: {name} is on {t.device}; the kernels run on {default_device()}"
            )
    if not q.shape == k.shape == v.shape:
        raise ValueError(
            f"attention: q, k and v must have one shape, got {tuple(q.shape)}, "
            f"{tuple(k.shape)}, {tuple(v.shape)}"
        )
    if not q.dtype == k.dtype == v.dtype or q.dtype not in SUPPORTED_DTYPES:
        supported = ", ".join(_name(d) for d in SUPPORTED_DTYPES)
        raise TypeError(
            f"attention: q, k and v must share one dtype of {supported}; got "
            f"{_name(q.dtype)}, {_name(k.dtype)}, {_name(v.dtype)}"
        )
    if q.shape[-1] not in HEAD_DIMS:
        raise ValueError(
            f"attention: head dimension {q.shape[-1]}; the tile rules are made for "
            f"{' and '.join(map(str, HEAD_DIMS))}"
        )


def _rows_contiguous(t: torch.Tensor) -> torch.Tensor:
    """``t``, or a contiguous copy when its last dimension is not contiguous."""
    return t if t.stride(-1) == 1 else t.contiguous()


def _strides(t: torch.Tensor) -> tuple[int, int, int]:
    return t.stride(0), t.stride(1), t.stride(2)


def _precision(dtype: torch.dtype) -> dict:
    """The numerics constexprs: IEEE fp32 (no TF32); bf16 via fp32 under the interpreter only."""
    dot_in_fp32 = interpreting() and dtype == torch.bfloat16
    input_precision = "ieee" if dtype == torch.float32 or dot_in_fp32 else "tf32"
    return dict(DOT_IN_FP32=dot_in_fp32, INPUT_PRECISION=input_precision)


def attention_fwd(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(o, lse)``: the output, and the log-sum-exp of each query row's scaled scores (fp32,
    ``B x H x N``), which the backward recomputes the probabilities from."""
    _check(q, k, v)
    q, k, v = _rows_contiguous(q), _rows_contiguous(k), _rows_contiguous(v)
    batch, heads, n, head_dim = q.shape
    o = torch.empty((batch, heads, n, head_dim), dtype=q.dtype, device=q.device)
    lse = torch.empty((batch, heads, n), dtype=torch.float32, device=q.device)
    if o.numel() == 0:
        return o, lse
    tiles = plan(head_dim, q.dtype).forward
    grid = (triton.cdiv(n, tiles.block_m), batch * heads)
    _attention_fwd_kernel[grid](
        q, k, v, o, lse, *_strides(q), *_strides(k), *_strides(v), heads, n,
        LOG2E / math.sqrt(head_dim),
        HEAD_DIM=head_dim, BLOCK_M=tiles.block_m, BLOCK_N=tiles.block_n, CAUSAL=bool(causal),
        num_warps=tiles.num_warps, num_stages=tiles.num_stages, **_precision(q.dtype),
    )  # fmt: skip
    return o, lse


def attention_bwd(
    grad_o: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(dq, dk, dv)`` from the output's gradient and what the forward saved: the inputs, the
    output ``o`` (contiguous, as :func:`attention_fwd` makes it) and the log-sum-exps."""
    _check(q, k, v)
    if grad_o.shape != q.shape:
        raise ValueError(
            f"attention backward: the gradient is {tuple(grad_o.shape)}; expected {tuple(q.shape)}"
        )
    q, k, v = _rows_contiguous(q), _rows_contiguous(k), _rows_contiguous(v)
    # autograd may hand over an expanded or transposed gradient, or another dtype
    grad_o = grad_o.to(q.dtype).contiguous()
    o, lse = o.contiguous(), lse.contiguous()  # the kernels index them as contiguous
    batch, heads, n, head_dim = q.shape
    dq, dk, dv = (torch.empty((batch, heads, n, head_dim), dtype=q.dtype, device=q.device)
                  for _ in range(3))  # fmt: skip
    delta = torch.empty((batch, heads, n), dtype=torch.float32, device=q.device)
    if dq.numel() == 0:
        return dq, dk, dv
    tiles = plan(head_dim, q.dtype)
    common = dict(HEAD_DIM=head_dim, CAUSAL=bool(causal), **_precision(q.dtype))
    strides = (*_strides(q), *_strides(k), *_strides(v))
    sm_scale = 1.0 / math.sqrt(head_dim)
    _attention_bwd_dq_kernel[(triton.cdiv(n, tiles.dq.block_m), batch * heads)](
        q, k, v, o, grad_o, lse, dq, delta, *strides, heads, n, sm_scale,
        BLOCK_M=tiles.dq.block_m, BLOCK_N=tiles.dq.block_n, num_warps=tiles.dq.num_warps,
        num_stages=tiles.dq.num_stages, **common,
    )  # fmt: skip
    _attention_bwd_dkdv_kernel[(triton.cdiv(n, tiles.dkdv.block_n), batch * heads)](
        q, k, v, grad_o, lse, delta, dk, dv, *strides, heads, n, sm_scale,
        BLOCK_M=tiles.dkdv.block_m, BLOCK_N=tiles.dkdv.block_n, num_warps=tiles.dkdv.num_warps,
        num_stages=tiles.dkdv.num_stages, **common,
    )  # fmt: skip
    return dq, dk, dv


# --------------------------------------------------------------------------- autograd


class Attention(torch.autograd.Function):
    """Saves q, k, v, the output and the fp32 log-sum-exps (no N x N matrix); the backward
    recomputes the probabilities tile by tile from them."""

    @staticmethod
    def forward(ctx, q, k, v, causal):
        o, lse = attention_fwd(q, k, v, causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, grad_o):
        q, k, v, o, lse = ctx.saved_tensors
        return (*attention_bwd(grad_o, q, k, v, o, lse, ctx.causal), None)


def attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False
) -> torch.Tensor:
    """``softmax(q k^T / sqrt(D)) v`` for B x H x N x D tensors of one dtype, query row ``i``
    seeing keys ``j <= i`` when ``causal``; differentiable through :class:`Attention`."""
    if torch.is_grad_enabled() and any(
        isinstance(t, torch.Tensor) and t.requires_grad for t in (q, k, v)
    ):
        return Attention.apply(q, k, v, causal)
    return attention_fwd(q, k, v, causal)[0]
