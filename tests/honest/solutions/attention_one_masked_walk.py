"""Attention forward and backward as a learner might first write them: one walk per program
over every tile it must see, each tile masked (no unmasked fast path), natural exponentials
with the exp2-unit scale converted back, and the log-sum-exp stored as max + ln(sum)."""

import triton
import triton.language as tl


@triton.jit
def _forward_tiles(acc, row_sum, row_max, q, k_head, v_head, stride_kn, stride_vn, rows,
                   key_start, key_stop, n, qk_scale, HEAD_DIM: tl.constexpr,
                   BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr,
                   DOT_IN_FP32: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    cols = tl.arange(0, HEAD_DIM)
    for start in range(key_start, key_stop, BLOCK_N):
        idx = start + tl.arange(0, BLOCK_N)
        inside = idx < n
        kt = tl.load(k_head + idx.to(tl.int64)[:, None] * stride_kn + cols[None, :],
                     mask=inside[:, None], other=0.0)
        vt = tl.load(v_head + idx.to(tl.int64)[:, None] * stride_vn + cols[None, :],
                     mask=inside[:, None], other=0.0)
        if DOT_IN_FP32:
            kt = kt.to(tl.float32)
            vt = vt.to(tl.float32)
        s = tl.dot(q, tl.trans(kt), input_precision=INPUT_PRECISION) * qk_scale
        keep = inside[None, :]
        if CAUSAL:
            keep = keep & (rows[:, None] >= idx[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(row_max, tl.max(s, axis=1))
        alpha = tl.exp((row_max - m_new) * 0.6931471805599453)
        p = tl.exp((s - m_new[:, None]) * 0.6931471805599453)
        acc = acc * alpha[:, None] + tl.dot(p.to(vt.dtype), vt, input_precision=INPUT_PRECISION)
        row_sum = row_sum * alpha + tl.sum(p, axis=1)
        row_max = m_new
    return acc, row_sum, row_max


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, stride_qb, stride_qh, stride_qn,
                          stride_kb, stride_kh, stride_kn, stride_vb, stride_vh, stride_vn,
                          heads, n, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                          DOT_IN_FP32: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // heads).to(tl.int64)
    h = (bh % heads).to(tl.int64)
    offs = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, HEAD_DIM)
    live = offs < n
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs.to(tl.int64)[:, None] * stride_qn
                + cols[None, :], mask=live[:, None], other=0.0)
    if DOT_IN_FP32:
        q = q.to(tl.float32)
    if CAUSAL:
        stop = tl.minimum((pid + 1) * BLOCK_M, n)
    else:
        stop = n
    acc, l_i, m_i = _forward_tiles(
        tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32), tl.zeros((BLOCK_M,), dtype=tl.float32),
        tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32), q,
        k_ptr + b * stride_kb + h * stride_kh, v_ptr + b * stride_vb + h * stride_vh,
        stride_kn, stride_vn, offs, 0, stop, n, qk_scale, HEAD_DIM, BLOCK_N, True, CAUSAL,
        DOT_IN_FP32, INPUT_PRECISION)
    flat = bh.to(tl.int64) * n + offs
    tl.store(o_ptr + flat[:, None] * HEAD_DIM + cols[None, :],
             (acc / l_i[:, None]).to(o_ptr.dtype.element_ty), mask=live[:, None])
    tl.store(lse_ptr + flat, m_i * 0.6931471805599453 + tl.log(l_i), mask=live)


@triton.jit
def _dq_tiles(dq, q, do, lse, delta, k_head, v_head, stride_kn, stride_vn, rows, key_start,
              key_stop, n, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr,
              MASKED: tl.constexpr, CAUSAL: tl.constexpr, DOT_IN_FP32: tl.constexpr,
              INPUT_PRECISION: tl.constexpr):
    cols = tl.arange(0, HEAD_DIM)
    for start in range(key_start, key_stop, BLOCK_N):
        idx = start + tl.arange(0, BLOCK_N)
        inside = idx < n
        kt = tl.load(k_head + idx.to(tl.int64)[:, None] * stride_kn + cols[None, :],
                     mask=inside[:, None], other=0.0)
        vt = tl.load(v_head + idx.to(tl.int64)[:, None] * stride_vn + cols[None, :],
                     mask=inside[:, None], other=0.0)
        if DOT_IN_FP32:
            kt = kt.to(tl.float32)
            vt = vt.to(tl.float32)
        s = tl.dot(q, tl.trans(kt), input_precision=INPUT_PRECISION) * qk_scale
        keep = inside[None, :]
        if CAUSAL:
            keep = keep & (rows[:, None] >= idx[None, :])
        p = tl.where(keep, tl.exp((s - lse[:, None]) * 0.6931471805599453), 0.0)
        dp = tl.dot(do, tl.trans(vt), input_precision=INPUT_PRECISION)
        dq += tl.dot((p * (dp - delta[:, None])).to(kt.dtype), kt,
                     input_precision=INPUT_PRECISION)
    return dq


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_bwd_dq_kernel(q_ptr, k_ptr, v_ptr, o_ptr, do_ptr, lse_ptr, dq_ptr, delta_ptr,
                             stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
                             stride_vb, stride_vh, stride_vn, heads, n, sm_scale,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                             BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                             DOT_IN_FP32: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // heads).to(tl.int64)
    h = (bh % heads).to(tl.int64)
    offs = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, HEAD_DIM)
    live = offs < n
    flat = bh.to(tl.int64) * n + offs
    dense = flat[:, None] * HEAD_DIM + cols[None, :]
    q = tl.load(q_ptr + b * stride_qb + h * stride_qh + offs.to(tl.int64)[:, None] * stride_qn
                + cols[None, :], mask=live[:, None], other=0.0)
    do = tl.load(do_ptr + dense, mask=live[:, None], other=0.0)
    o = tl.load(o_ptr + dense, mask=live[:, None], other=0.0).to(tl.float32)
    d_i = tl.sum(o * do.to(tl.float32), axis=1)
    tl.store(delta_ptr + flat, d_i, mask=live)
    lse = tl.load(lse_ptr + flat, mask=live, other=0.0) * 1.4426950408889634  # to exp2 units
    if DOT_IN_FP32:
        q = q.to(tl.float32)
        do = do.to(tl.float32)
    if CAUSAL:
        stop = tl.minimum((pid + 1) * BLOCK_M, n)
    else:
        stop = n
    dq = _dq_tiles(tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32), q, do, lse, d_i,
                   k_ptr + b * stride_kb + h * stride_kh, v_ptr + b * stride_vb + h * stride_vh,
                   stride_kn, stride_vn, offs, 0, stop, n, sm_scale * 1.4426950408889634,
                   HEAD_DIM, BLOCK_N, True, CAUSAL, DOT_IN_FP32, INPUT_PRECISION)
    tl.store(dq_ptr + dense, (dq * sm_scale).to(dq_ptr.dtype.element_ty), mask=live[:, None])


@triton.jit
def _dkdv_tiles(dk, dv, k, v, keys, q_head, stride_qn, do_head, lse_head, delta_head, row_start,
                row_stop, n, qk_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                MASKED: tl.constexpr, CAUSAL: tl.constexpr, DOT_IN_FP32: tl.constexpr,
                INPUT_PRECISION: tl.constexpr):
    cols = tl.arange(0, HEAD_DIM)
    for start in range(row_start, row_stop, BLOCK_M):
        idx = start + tl.arange(0, BLOCK_M)
        inside = idx < n
        qt = tl.load(q_head + idx.to(tl.int64)[:, None] * stride_qn + cols[None, :],
                     mask=inside[:, None], other=0.0)
        dot = tl.load(do_head + idx.to(tl.int64)[:, None] * HEAD_DIM + cols[None, :],
                      mask=inside[:, None], other=0.0)
        lse = tl.load(lse_head + idx, mask=inside, other=0.0)
        d_i = tl.load(delta_head + idx, mask=inside, other=0.0)
        if DOT_IN_FP32:
            qt = qt.to(tl.float32)
            dot = dot.to(tl.float32)
        s_t = tl.dot(k, tl.trans(qt), input_precision=INPUT_PRECISION) * qk_scale
        keep = inside[None, :]
        if CAUSAL:
            keep = keep & (idx[None, :] >= keys[:, None])
        p_t = tl.where(keep, tl.exp(s_t * 0.6931471805599453 - lse[None, :]), 0.0)
        dv += tl.dot(p_t.to(dot.dtype), dot, input_precision=INPUT_PRECISION)
        dp_t = tl.dot(v, tl.trans(dot), input_precision=INPUT_PRECISION)
        dk += tl.dot((p_t * (dp_t - d_i[None, :])).to(qt.dtype), qt,
                     input_precision=INPUT_PRECISION)
    return dk, dv


@triton.jit(do_not_specialize=["heads", "n"])
def _attention_bwd_dkdv_kernel(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr,
                               stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
                               stride_vb, stride_vh, stride_vn, heads, n, sm_scale,
                               HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                               BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                               DOT_IN_FP32: tl.constexpr, INPUT_PRECISION: tl.constexpr):
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // heads).to(tl.int64)
    h = (bh % heads).to(tl.int64)
    keys = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    cols = tl.arange(0, HEAD_DIM)
    live = keys < n
    k = tl.load(k_ptr + b * stride_kb + h * stride_kh + keys.to(tl.int64)[:, None] * stride_kn
                + cols[None, :], mask=live[:, None], other=0.0)
    v = tl.load(v_ptr + b * stride_vb + h * stride_vh + keys.to(tl.int64)[:, None] * stride_vn
                + cols[None, :], mask=live[:, None], other=0.0)
    if DOT_IN_FP32:
        k = k.to(tl.float32)
        v = v.to(tl.float32)
    if CAUSAL:
        first = pid * BLOCK_N  # a multiple of BLOCK_M: rows before it see none of these keys
    else:
        first = 0
    dk, dv = _dkdv_tiles(
        tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32),
        tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32), k, v, keys,
        q_ptr + b * stride_qb + h * stride_qh, stride_qn, do_ptr + bh.to(tl.int64) * n * HEAD_DIM,
        lse_ptr + bh.to(tl.int64) * n, delta_ptr + bh.to(tl.int64) * n, first, n, n,
        sm_scale * 1.4426950408889634, HEAD_DIM, BLOCK_M, True, CAUSAL, DOT_IN_FP32,
        INPUT_PRECISION)
    dense = (bh.to(tl.int64) * n + keys)[:, None] * HEAD_DIM + cols[None, :]
    tl.store(dk_ptr + dense, (dk * sm_scale).to(dk_ptr.dtype.element_ty), mask=live[:, None])
    tl.store(dv_ptr + dense, dv.to(dv_ptr.dtype.element_ty), mask=live[:, None])
