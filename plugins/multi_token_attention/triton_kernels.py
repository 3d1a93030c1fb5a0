"""Multi-token attention in Triton: KernelIndex's own kernels (``kernelindex_triton``).

Computes exactly :func:`plugins.multi_token_attention.reference.multi_token_attention_torch`
(same signature): causal mask, softmax, ``k x k`` convolution across heads and positions,
bias, causal mask, without ever writing the probabilities to memory.

forward, two launches::

    lse[b, c, i] = log2 sum_{j <= i} 2^(s[b, c, i, j] * log2 e)       _mta_row_stats_kernel
    out tile = mask0(bias + sum_{c,u,v} w[:, c, u, v] * P[c, i+u-p, j+v-p])
        with P recomputed as 2^(s * log2 e - lse) (0 for j > i)         _mta_fwd_kernel

Each output tile needs a halo of ``k // 2`` rows and columns of P; rather than store P,
the kernel reloads the shifted score tiles (from L1/L2) and recomputes P for each of the
``k * k`` shifts: ``heads_in * k^2`` exponentials per position (36 for 4 heads, k = 3),
shared by all ``heads_out`` outputs. Tiles wholly above the diagonal only store zeros.

backward (``g = mask0(dout)``), two launches::

    dP[c, r, s] = sum_{o,u,v} w[o, c, u, v] * g[o, r-u+p, s-v+p]      (transposed convolution)
    delta[c, r] = sum_s dP * P,   dW partials = sum P * shifted g,      _mta_bwd_reduce_kernel
        dbias partials = sum g                                           (delta by atomics)
    dscores = P * (dP - delta)                                          _mta_bwd_scores_kernel

The weight and bias partials (one row per tile) are summed by torch.

Traffic (bf16, B 2, heads 4 -> 4, L 1024): scores 16.8 MB, output 16.8 MB; the floor
(read scores once, write output once) is 33.6 MB = 7.9 us at 4.27 TB/s. This forward
reads only the causal half of the scores, twice (statistics, then the convolution):
16.8 MB, and writes the whole output: 16.8 MB, so the same 33.6 MB. FLOPs: 2 * 36 FMA
per output position plus 36 exponentials, about 0.3 GFLOP and 38 M exponentials over
the causal half: ~9 us of the special-function units at 1.98 GHz, on par with the bytes.
"""

from __future__ import annotations

import os
from typing import Optional

import torch
import triton
import triton.language as tl

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_LOG2E = 1.4426950408889634


# ----------------------------------------------------------------------------- row statistics


def _stats_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_R": 8, "BLOCK_N": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_R": r, "BLOCK_N": n}, num_warps=w)
            for r, n, w in [(16, 128, 4), (32, 128, 4), (16, 256, 4), (32, 256, 8), (64, 128, 8)]]


@triton.autotune(configs=_stats_configs(), key=["L"])
@triton.jit
def _mta_row_stats_kernel(s_ptr, lse_ptr, L, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """Base-2 log-sum-exp of the causal part of ``BLOCK_R`` rows of one (batch, head) plane.

    Reads only columns ``j <= i``. Grid: ``(cdiv(L, BLOCK_R), batch * heads_in)``.
    """
    pid_r = tl.program_id(0)
    plane = tl.program_id(1).to(tl.int64)
    rows = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    base = s_ptr + plane * L * L
    m = tl.full((BLOCK_R,), -1.0e30, dtype=tl.float32)
    total = tl.zeros((BLOCK_R,), dtype=tl.float32)
    last = tl.minimum((pid_r + 1) * BLOCK_R, L)
    for c0 in range(0, last, BLOCK_N):
        cols = c0 + tl.arange(0, BLOCK_N)
        ok = (cols[None, :] <= rows[:, None]) & (rows[:, None] < L)
        x = tl.load(base + rows[:, None] * L + cols[None, :], mask=ok, other=float("-inf")).to(tl.float32) * 1.4426950408889634
        m_new = tl.maximum(m, tl.max(x, axis=1))
        total = total * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
        m = m_new
    tl.store(lse_ptr + plane * L + rows, m + tl.log2(tl.where(rows < L, total, 1.0)), mask=rows < L)


# ----------------------------------------------------------------------------- forward


def _fwd_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w)
            for m, n, w in [(16, 64, 4), (32, 32, 4), (32, 64, 4), (32, 64, 8), (64, 64, 8), (32, 128, 8)]]


@triton.autotune(configs=_fwd_configs(), key=["L", "C_IN", "C_OUT", "K"])
@triton.jit
def _mta_fwd_kernel(s_ptr, lse_ptr, w_ptr, bias_ptr, out_ptr, L,
                    C_IN: tl.constexpr, C_OUT: tl.constexpr, C_OUT_P: tl.constexpr,
                    IN_PER_GROUP: tl.constexpr, OUT_PER_GROUP: tl.constexpr, K: tl.constexpr,
                    HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """All ``C_OUT`` output planes of one ``BLOCK_M x BLOCK_N`` tile of one batch element.

    Accumulates ``[C_OUT_P, BLOCK_M, BLOCK_N]`` in fp32: for every input head ``c`` and
    shift ``(u, v)``, P of the shifted tile is recomputed from the scores and ``lse`` and
    added, times the weight column ``w[:, c, u, v]``, to every output plane.
    Grid: ``(cdiv(L, BLOCK_M) * cdiv(L, BLOCK_N), batch)``.
    """
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_n = tl.cdiv(L, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    outs = tl.arange(0, C_OUT_P)
    out_ok = outs < C_OUT

    acc = tl.zeros((C_OUT_P, BLOCK_M, BLOCK_N), dtype=tl.float32)
    if pid_n * BLOCK_N < (pid_m + 1) * BLOCK_M:  # the tile reaches the causal half
        for c in tl.static_range(C_IN):
            plane = (batch * C_IN + c).to(tl.int64)
            w_local = c - (outs // OUT_PER_GROUP) * IN_PER_GROUP  # c's index within o's group
            w_ok = out_ok & (w_local >= 0) & (w_local < IN_PER_GROUP)
            for u in tl.static_range(K):
                r = rows + (u - K // 2)
                r_ok = (r >= 0) & (r < L)
                lse_r = tl.load(lse_ptr + plane * L + r, mask=r_ok, other=0.0)
                for v in tl.static_range(K):
                    s = cols + (v - K // 2)
                    ok = r_ok[:, None] & (s[None, :] >= 0) & (s[None, :] <= r[:, None])
                    x = tl.load(s_ptr + plane * L * L + r[:, None] * L + s[None, :], mask=ok, other=0.0)
                    p = tl.where(ok, tl.exp2(x.to(tl.float32) * 1.4426950408889634 - lse_r[:, None]), 0.0)
                    w = tl.load(w_ptr + ((outs * IN_PER_GROUP + w_local) * K + u) * K + v, mask=w_ok, other=0.0)
                    acc += w.to(tl.float32)[:, None, None] * p[None, :, :]
        if HAS_BIAS:
            acc += tl.load(bias_ptr + outs, mask=out_ok, other=0.0).to(tl.float32)[:, None, None]
        acc = tl.where((cols[None, :] <= rows[:, None])[None, :, :], acc, 0.0)

    out_planes = (batch * C_OUT + outs).to(tl.int64)
    out_ptrs = out_ptr + out_planes[:, None, None] * L * L + (rows[:, None] * L + cols[None, :])[None, :, :]
    in_range = (rows[:, None] < L) & (cols[None, :] < L)
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=out_ok[:, None, None] & in_range[None, :, :])


# ----------------------------------------------------------------------------- backward


@triton.jit
def _mta_probs_tile(s_ptr, lse_ptr, batch, rows, cols, L, C_IN: tl.constexpr, C_IN_P: tl.constexpr):
    """P of the tile's own positions for every input head: ``[C_IN_P, BLOCK_M, BLOCK_N]``, 0 off the causal half."""
    ins = tl.arange(0, C_IN_P)
    planes = (batch * C_IN + ins).to(tl.int64)
    row_ok = (ins < C_IN)[:, None] & (rows < L)[None, :]
    lse = tl.load(lse_ptr + planes[:, None] * L + rows[None, :], mask=row_ok, other=0.0)
    ok = row_ok[:, :, None] & (cols[None, :] <= rows[:, None])[None, :, :]
    x = tl.load(s_ptr + planes[:, None, None] * L * L + (rows[:, None] * L + cols[None, :])[None, :, :],
                mask=ok, other=0.0)
    return tl.where(ok, tl.exp2(x.to(tl.float32) * 1.4426950408889634 - lse[:, :, None]), 0.0)


@triton.jit
def _mta_dprobs_tile(g_ptr, w_ptr, probs, dw_part_ptr, db_part_ptr, part, batch, rows, cols, L,
                     C_IN_P: tl.constexpr, C_OUT: tl.constexpr, IN_PER_GROUP: tl.constexpr,
                     OUT_PER_GROUP: tl.constexpr, K: tl.constexpr, HAS_BIAS: tl.constexpr,
                     WEIGHT_GRADS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """dP of the tile for every input head (transposed convolution of the masked ``g``).

    With ``WEIGHT_GRADS``, also stores this tile's share of dW (``sum P * shifted g``) and
    of dbias (``sum g``) into row ``part`` of the partial buffers.
    """
    ins = tl.arange(0, C_IN_P)
    dprobs = tl.zeros((C_IN_P, BLOCK_M, BLOCK_N), dtype=tl.float32)
    for o in tl.static_range(C_OUT):
        g_plane = g_ptr + (batch * C_OUT + o).to(tl.int64) * L * L
        w_local = ins - (o // OUT_PER_GROUP) * IN_PER_GROUP
        w_ok = (w_local >= 0) & (w_local < IN_PER_GROUP)
        for u in tl.static_range(K):
            i = rows - (u - K // 2)
            i_ok = (i >= 0) & (i < L)
            for v in tl.static_range(K):
                j = cols - (v - K // 2)
                ok = i_ok[:, None] & (j[None, :] >= 0) & (j[None, :] <= i[:, None])
                g = tl.load(g_plane + i[:, None] * L + j[None, :], mask=ok, other=0.0).to(tl.float32)
                w_index = ((o * IN_PER_GROUP + w_local) * K + u) * K + v
                w = tl.load(w_ptr + w_index, mask=w_ok, other=0.0).to(tl.float32)
                dprobs += w[:, None, None] * g[None, :, :]
                if WEIGHT_GRADS:
                    share = tl.sum(tl.sum(probs * g[None, :, :], axis=2), axis=1)
                    tl.store(dw_part_ptr + part * (C_OUT * IN_PER_GROUP * K * K) + w_index, share, mask=w_ok)
                    if HAS_BIAS and u == K // 2 and v == K // 2:
                        tl.store(db_part_ptr + part * C_OUT + o, tl.sum(tl.sum(g, axis=1), axis=0))
    return dprobs


@triton.jit
def _mta_bwd_reduce_kernel(s_ptr, lse_ptr, w_ptr, g_ptr, delta_ptr, dw_part_ptr, db_part_ptr, L,
                           C_IN: tl.constexpr, C_IN_P: tl.constexpr, C_OUT: tl.constexpr,
                           IN_PER_GROUP: tl.constexpr, OUT_PER_GROUP: tl.constexpr, K: tl.constexpr,
                           HAS_BIAS: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Row sums ``delta = sum_s dP * P`` (atomically added over column tiles) and the tile's
    dW / dbias partials. Tiles wholly above the diagonal have P = 0 and g = 0 there: they
    return at once (their partial rows stay zero). Grid: ``(cdiv(L, BM) * cdiv(L, BN), batch)``.
    """
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_n = tl.cdiv(L, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    if pid_n * BLOCK_N < (pid_m + 1) * BLOCK_M:
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        part = batch * tl.num_programs(0) + pid
        probs = _mta_probs_tile(s_ptr, lse_ptr, batch, rows, cols, L, C_IN, C_IN_P)
        dprobs = _mta_dprobs_tile(g_ptr, w_ptr, probs, dw_part_ptr, db_part_ptr, part, batch, rows, cols, L,
                                  C_IN_P, C_OUT, IN_PER_GROUP, OUT_PER_GROUP, K, HAS_BIAS, True, BLOCK_M, BLOCK_N)
        ins = tl.arange(0, C_IN_P)
        planes = (batch * C_IN + ins).to(tl.int64)
        tl.atomic_add(delta_ptr + planes[:, None] * L + rows[None, :], tl.sum(dprobs * probs, axis=2),
                      mask=(ins < C_IN)[:, None] & (rows < L)[None, :])


def _bwd_scores_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 16, "BLOCK_N": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w)
            for m, n, w in [(16, 64, 4), (32, 64, 4), (32, 64, 8), (64, 64, 8)]]


@triton.autotune(configs=_bwd_scores_configs(), key=["L", "C_IN", "C_OUT", "K"])
@triton.jit
def _mta_bwd_scores_kernel(s_ptr, lse_ptr, w_ptr, g_ptr, delta_ptr, ds_ptr, L,
                           C_IN: tl.constexpr, C_IN_P: tl.constexpr, C_OUT: tl.constexpr,
                           IN_PER_GROUP: tl.constexpr, OUT_PER_GROUP: tl.constexpr, K: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``dscores = P * (dP - delta)`` for every input head of one tile (zeros above the diagonal).

    Grid: ``(cdiv(L, BLOCK_M) * cdiv(L, BLOCK_N), batch)``.
    """
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_n = tl.cdiv(L, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ins = tl.arange(0, C_IN_P)
    planes = (batch * C_IN + ins).to(tl.int64)
    row_ok = (ins < C_IN)[:, None] & (rows < L)[None, :]
    grad = tl.zeros((C_IN_P, BLOCK_M, BLOCK_N), dtype=tl.float32)
    if pid_n * BLOCK_N < (pid_m + 1) * BLOCK_M:
        probs = _mta_probs_tile(s_ptr, lse_ptr, batch, rows, cols, L, C_IN, C_IN_P)
        dprobs = _mta_dprobs_tile(g_ptr, w_ptr, probs, g_ptr, g_ptr, 0, batch, rows, cols, L,
                                  C_IN_P, C_OUT, IN_PER_GROUP, OUT_PER_GROUP, K, False, False, BLOCK_M, BLOCK_N)
        delta = tl.load(delta_ptr + planes[:, None] * L + rows[None, :], mask=row_ok, other=0.0)
        grad = probs * (dprobs - delta[:, :, None])
    ptrs = ds_ptr + planes[:, None, None] * L * L + (rows[:, None] * L + cols[None, :])[None, :, :]
    tl.store(ptrs, grad.to(ds_ptr.dtype.element_ty), mask=row_ok[:, :, None] & (cols < L)[None, None, :])


# ----------------------------------------------------------------------------- launchers

_REDUCE_BLOCK = (32, 64, 8)  # BLOCK_M, BLOCK_N, num_warps of the (not autotuned: it adds atomically) reduce kernel


def _shape_constants(scores, weight, groups):
    batch, heads_in, seq, _ = scores.shape
    heads_out, in_per_group, k, _ = weight.shape
    return dict(C_IN=heads_in, C_OUT=heads_out, IN_PER_GROUP=in_per_group, OUT_PER_GROUP=heads_out // groups, K=k)


def _row_stats(scores):
    batch, heads_in, seq, _ = scores.shape
    lse = torch.empty(batch, heads_in, seq, device=scores.device, dtype=torch.float32)
    _mta_row_stats_kernel[lambda meta: (triton.cdiv(seq, meta["BLOCK_R"]), batch * heads_in)](scores, lse, seq)
    return lse


class _MultiTokenAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, weight, bias, groups):
        scores = scores.contiguous()
        weight = weight.contiguous()
        batch, heads_in, seq, _ = scores.shape
        consts = _shape_constants(scores, weight, groups)
        lse = _row_stats(scores)
        out = torch.empty(batch, consts["C_OUT"], seq, seq, device=scores.device, dtype=scores.dtype)

        def grid(meta):
            return (triton.cdiv(seq, meta["BLOCK_M"]) * triton.cdiv(seq, meta["BLOCK_N"]), batch)

        _mta_fwd_kernel[grid](scores, lse, weight, bias if bias is not None else weight, out, seq,
                              C_OUT_P=triton.next_power_of_2(consts["C_OUT"]), HAS_BIAS=bias is not None, **consts)
        ctx.save_for_backward(scores, lse, weight)
        ctx.groups = groups
        ctx.has_bias = bias is not None
        ctx.bias_dtype = bias.dtype if bias is not None else None
        return out

    @staticmethod
    def backward(ctx, grad_out):
        scores, lse, weight = ctx.saved_tensors
        grad_out = grad_out.contiguous()
        batch, heads_in, seq, _ = scores.shape
        consts = _shape_constants(scores, weight, ctx.groups)
        c_in_p = triton.next_power_of_2(heads_in)
        block_m, block_n, warps = _REDUCE_BLOCK
        tiles = triton.cdiv(seq, block_m) * triton.cdiv(seq, block_n)
        delta = torch.zeros(batch, heads_in, seq, device=scores.device, dtype=torch.float32)
        dw_part = torch.zeros(batch * tiles, weight.numel(), device=scores.device, dtype=torch.float32)
        db_part = torch.zeros(batch * tiles, consts["C_OUT"], device=scores.device, dtype=torch.float32)
        _mta_bwd_reduce_kernel[(tiles, batch)](scores, lse, weight, grad_out, delta, dw_part, db_part, seq,
                                               C_IN_P=c_in_p, HAS_BIAS=ctx.has_bias, BLOCK_M=block_m,
                                               BLOCK_N=block_n, num_warps=warps, **consts)
        dscores = torch.empty_like(scores)

        def grid(meta):
            return (triton.cdiv(seq, meta["BLOCK_M"]) * triton.cdiv(seq, meta["BLOCK_N"]), batch)

        _mta_bwd_scores_kernel[grid](scores, lse, weight, grad_out, delta, dscores, seq, C_IN_P=c_in_p, **consts)
        dweight = dw_part.sum(0).view(weight.shape).to(weight.dtype)
        dbias = db_part.sum(0).to(ctx.bias_dtype) if ctx.has_bias else None
        return dscores, dweight, dbias, None


def multi_token_attention_triton(scores: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], *,
                                 groups: int = 1) -> torch.Tensor:
    """Same contract as ``reference.multi_token_attention_torch``; differentiable.

    Probabilities, convolution sums and gradients are kept in fp32 inside the kernels;
    outputs are stored in the scores' dtype.
    """
    if scores.dim() != 4 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"scores must be [batch, heads_in, seq, seq], got {tuple(scores.shape)}")
    k = weight.shape[-1]
    if weight.dim() != 4 or weight.shape[-2] != k or k % 2 == 0 or weight.shape[1] * groups != scores.shape[1]:
        raise ValueError(f"weight must be [heads_out, heads_in/groups, k, k] with k odd, got {tuple(weight.shape)}")
    return _MultiTokenAttention.apply(scores, weight, bias, groups)


# ----------------------------------------------------------------------------- records

_AUTOTUNED = {
    "_mta_row_stats_kernel": _mta_row_stats_kernel,
    "_mta_fwd_kernel": _mta_fwd_kernel,
    "_mta_bwd_scores_kernel": _mta_bwd_scores_kernel,
}


def _config_document(config) -> dict:
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


def tuned_configs() -> dict[str, list[dict]]:
    """Every autotuned choice made so far in this process: kernel name -> ``[{key, config}]``.

    A kernel with a single candidate (as under the interpreter) reports it with key ``*``;
    the backward reduce kernel is not autotuned (it accumulates atomically) and reports
    its fixed blocks.
    """
    record = {}
    for name, kernel in _AUTOTUNED.items():
        if len(kernel.configs) == 1:
            record[name] = [{"key": ["*"], "config": _config_document(kernel.configs[0])}]
        else:
            record[name] = [{"key": [str(part) for part in key], "config": _config_document(config)}
                            for key, config in getattr(kernel, "cache", {}).items()]
    block_m, block_n, warps = _REDUCE_BLOCK
    record["_mta_bwd_reduce_kernel"] = [{"key": ["*"], "config": {"BLOCK_M": block_m, "BLOCK_N": block_n,
                                                                   "num_warps": warps}}]
    return record


def implementation_record() -> dict:
    """What a run records about this implementation: versions, precision and tuned configs."""
    return {"module": __name__, "triton": triton.__version__, "compute_precision": "fp32 inside, I/O in input dtype",
            "autotuned": tuned_configs()}
