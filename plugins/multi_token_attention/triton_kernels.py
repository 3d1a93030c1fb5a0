"""Multi-token attention in Triton: KernelIndex's own kernels (``kernelindex_triton``).

Computes :func:`plugins.multi_token_attention.reference.multi_token_attention_torch`
(same signature): causal mask, softmax, ``k x k`` convolution across heads and positions
(padding ``p = k // 2``), bias, causal mask, forward and backward.

forward, two launches (``cp`` = ``COL_PAD``, 8 for k <= 17; ``W`` = ``OUT_W``, 16 for k <= 17)::

    P_pad[c, r+p, s+cp] = softmax of row r over s <= r, in the scores' dtype   _mta_pad_kernel (SOFTMAX)
        (exactly as the torch formulation rounds it; 0 above the diagonal and in the border;
        stored chunk-major: W-column chunks, each a contiguous [rows, W] block);
        band[c*k+u] = w[:, c, u, :] as [2W, C_OUT*W] banded matrices
    out[o, i, j0+tW : j0+(t+1)W] = mask0(bias[o] + sum_{c,u} P_pad[c, i+u, j0+tW : j0+(t+2)W] @ band[c*k+u])
        for the four subtiles t of a program; 0 in tiles above the diagonal     _mta_conv_fwd_kernel
    or, in fp32 with 16 or more output heads (the band then w[:, c, u, v] as rows of a [C_IN*k*k, N] matrix):
    out[(i, j), o] = mask0(bias[o] + sum_{c,u,v} P_pad[c, i+u, j+v+cp-p] * w[c*k*k + u*k + v, o]), one
        product a tile of positions, its left operand gathered                  _mta_conv_im2col_kernel

The convolution runs on the tensor cores (fp32 in TF32, or as three TF32 products:
``precision``): for each (input head, tap row), the ``k`` column taps of every output head
are one product with a banded matrix (``2W = 32`` columns of P in, 16 columns of each
output head out). A program reads P in 16-column
chunks shared by neighbouring subtiles and the banded weights once for its four
subtiles, for at most four output heads (:func:`_heads_per_program`; more heads are more
programs reading the same P from L2). Both operands are aligned tiles read as they lie, so the loop is a GEMM's:
asynchronous copies into shared memory, no per-element work. P is stored chunk-major so
that each ``[64, 16]`` chunk tile is one contiguous 2 KB block: a warp's 512-byte copy
then touches 4 cache lines, where row-major P's 32-byte row pieces touched 16. P's bf16
rounding is the contract's, products of bf16 are exact and sums fp32, so the result is
the direct convolution's to fp32 summation order. The softmax pass is bound by
instruction issue when its inputs sit in L2 (ncu on the H200: 3.1 instructions a cycle
per SM of 4), so lanes that do nothing cost: a row block whose causal part fits a tile
of ``BLOCK_N``, ``BLOCK_N / 2`` or ``BLOCK_N / 4`` columns is read once into the
narrowest of them, with one exponential (after one fused multiply-add) per element, and
stores of zeros step through narrow tiles; the one- and two-warp configs reduce rows
without shared memory or barriers. Longer rows are read
twice (the second time mostly from L2). Loads and stores are 16 bytes wide (the 8-column
left border keeps source and destination aligned). P_pad is written only as far as the
tiles read it (see ``_mta_pad_kernel``), never the far upper triangle, and is saved for
the backward.

The two launches overlap. The softmax pass lets the convolution launch once all its
programs have started (:func:`plugins._triton_launcher.let_next_launch_start`). The
convolution's tiles wholly above the diagonal then store their zeros (~half the output)
while the pass still runs, as they read nothing it writes, and its other programs wait,
resident, for the pass to end.

backward, four launches (``g = mask0(dout)``)::

    G_pad[o, i+p, j+cp] = g[o, i, j], as P_pad; band' of w[o, c, k-1-u, k-1-v]  _mta_pad_kernel (copy, FLIP)
        (its band programs also zero the weight kernels' accumulators)
    dP[c, r, s] = sum_{o,u,v} w[o,c,u,v] * g[o, r-u+p, s-v+p], fp32           _mta_conv_fwd_kernel
        (the transposed convolution is the forward's, of G_pad with band', heads swapped; causal tiles only;
        _mta_conv_im2col_kernel where the forward's would be, as _uses_im2col says for the swapped heads)
    dW[o, c, u, v] += sum_jj R[(o, jj), (c, jj + v)], R = g^T @ P_pad shifted by u,
        per strip of columns, in 16 bits; dbias += sum g                        _mta_bwd_weight_strips_kernel
    or, in fp32: dW[o, (c, u, v)] += g @ im2col(P_pad) over positions          _mta_bwd_weight_im2col_kernel
        (both add atomically)
    delta[c, r] = sum_s dP * P;  dscores = P * (dP - delta);                  _mta_bwd_scores_kernel
        (its programs first sum the accumulators' replicas into dW, dbias, in their dtype)

Traffic (bf16, B 2, heads 4 -> 4, L 1024; floor = scores read once + output written
once = 33.6 MB = 7.9 us at 4.27 TB/s): the softmax pass reads the causal half (8.4 MB)
and writes the P band (~9 MB); the convolution reads the P band from L2 3.75 times over
(three row shifts, 80 columns for every 64 out: ~34 MB, plus a quarter of the banded
weights per subtile) and writes the output (16.8 MB, the zeros of ~7.5 MB of it while the
pass runs). FLOPs: the banded products do 2 * 32 * 12 * 4 per output
position over the causal half, 3.4 GFLOP, 3.4 us of the H200's bf16 tensor cores; the
useful ones (2 * 36 per position and head) are 0.3 GFLOP.

On the H200, in the rerun protocol (L2 flushed, host launch cost hidden), the forward takes
22.4..22.6 / 69.0..69.4 / 246.2..246.8 us at L 1024 / 2048 / 4096: 2.85 / 2.20 / 1.96 times
its floor; at 8 -> 8 heads, k 5, L 2048, 223 us in fp16 and 786 us in fp32 (TF32). The backward
takes 90 us at L 1024 and 0.99 ms at 8 -> 8 heads, k 5, L 2048 in fp16 (3.7 ms in fp32), the
weight gradient about half of it. Every launch is bound once a call signature (:class:`_Plan`),
so that a later call at a shape only allocates and launches. Autotuners time candidates by
CUDA-graph replay (:func:`plugins._triton_launcher.device_time`). What was tried on the way, measured and kept
or dropped, is in ``benchmarks/KERNELS.md``.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Optional

import torch
import triton
import triton.language as tl
from torch.autograd.function import once_differentiable

from plugins._arguments import check_offsets, check_precision, check_shape, check_tensors, described, whole_number
from plugins._triton_launcher import (Launcher, aligned, cdiv, device_time, follow_previous_launch, launch_device,
                                      lean_apply, let_next_launch_start, next_power_of_2)
from plugins._triton_launcher import tuned_configs as autotuned_choices
from plugins.multi_token_attention.reference import multi_token_attention_torch

_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
_LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)

FP32_DOT_PRECISION = "tf32"
"""How the convolution's products multiply fp32 operands by default: TF32 tensor cores (10-bit mantissa, fp32
accumulate), as cuDNN's convolutions do under torch's default flags. bf16 and fp16 products are exact on the tensor
cores whatever this says. IEEE products (``"ieee"``) run on the FMA units: at 8 heads and k 5 they made the fp32
forward 9x slower than TF32 (benchmarks/KERNELS.md)."""

PRECISE_FP32_DOT_PRECISION = "tf32x3"
"""The precise choice: each fp32 operand split into a TF32 head and tail, three TF32 products, fp32-grade results
(4.5x the TF32 forward at 8 heads and k 5, twice as fast as IEEE products)."""

_MAX_BLOCK_M = 64
_MAX_BLOCK_N = 64
"""The tallest tile of any config and the widest backward tile: padded buffers are sized and written for them."""


def _col_pad(k):
    """Zero columns left of a padded row: at least ``k // 2``, and a power of two (``tl.arange`` stores them) from 8
    up, so rows copy with 16-byte loads."""
    return max(8, next_power_of_2(k // 2))


def _subtile_width(k):
    """Output columns of a forward subtile: 16 (the narrowest ``tl.dot`` allows, so the banded weights waste
    least) unless the taps reach further: one subtile's taps must fit two chunks of its width."""
    return max(16, next_power_of_2(k // 2 + _col_pad(k)))


# ----------------------------------------------------------------------------- padded P (and G), banded weights


def _pad_configs():
    """Tiles of ``BLOCK_R`` rows; with one or two warps a row's max and sum need no shared memory or barrier."""
    if _INTERPRET:
        return [triton.Config({"BLOCK_R": 8, "BLOCK_N": 32}, num_warps=4)]
    return [triton.Config({"BLOCK_R": r, "BLOCK_N": n}, num_warps=w)
            for r, n, w in [(8, 128, 4), (8, 256, 4), (16, 256, 8), (4, 512, 4), (2, 1024, 4), (1, 2048, 4),
                            (1, 4096, 8), (2, 4096, 8),
                            (1, 512, 1), (1, 1024, 1), (2, 1024, 1), (1, 2048, 1), (1, 1024, 2), (2, 1024, 2),
                            (1, 2048, 2), (1, 4096, 2), (1, 4096, 4), (4, 256, 1), (2, 512, 1), (4, 512, 2)]]


@triton.jit
def _causal_row_chunk(src, row, row_ok, col, L, scale: tl.constexpr, fill: tl.constexpr):
    """``scale * src[row, col]`` in fp32 where ``0 <= col <= row < L``, else ``fill``. Loaded in whole
    8-column groups (16-byte loads where ``col`` runs start 8-aligned) and masked exactly after."""
    in_row = row_ok[:, None] & ((col >= 0) & (col < L))[None, :]
    x = tl.load(src + row[:, None] * L + col[None, :], mask=in_row & ((col // 8 * 8)[None, :] <= row[:, None]),
                other=0.0)
    return tl.where(in_row & (col[None, :] <= row[:, None]), x.to(tl.float32) * scale, fill)


@triton.jit
def _chunk_major_column(pcol, ROWS, CHUNK: tl.constexpr):
    """Offset of column ``pcol``'s element in row 0 of a chunk-major padded plane of ``ROWS`` rows: ``CHUNK``-column
    chunks, each a contiguous ``ROWS x CHUNK`` block (see :class:`_Padding`); row ``r`` is ``r * CHUNK`` further."""
    return pcol // CHUNK * (ROWS * CHUNK) + pcol % CHUNK


@triton.jit
def _padded_offsets(prow, pcol, ROWS, CHUNK: tl.constexpr):
    """Offsets of ``[prow, pcol]`` (rows by columns) in a chunk-major padded plane of ``ROWS`` rows."""
    return prow[:, None] * CHUNK + _chunk_major_column(pcol, ROWS, CHUNK)[None, :]


@triton.jit
def _softmax_once(src, dst, prow, row, row_ok, store_ok, end_col, L, ROWS, CHUNK: tl.constexpr,
                  COL_PAD: tl.constexpr, WIDTH: tl.constexpr, ZERO_W: tl.constexpr):
    """P of rows whose causal part fits ``WIDTH`` source columns, from one read and one exponential per element
    (``exp2(x - max) / sum``), stored shifted by the border; then the border's zeros and those from the tile's end
    up to ``end_col``, ``ZERO_W`` columns a step (a ``WIDTH``-wide step would mostly be masked off)."""
    col = tl.arange(0, WIDTH)
    x = tl.load(src + row[:, None] * L + col[None, :],
                mask=row_ok[:, None] & ((col // 8 * 8)[None, :] <= row[:, None]) & (col < L)[None, :], other=0.0)
    x = tl.where(col[None, :] <= row[:, None], x.to(tl.float32), float("-inf"))
    scaled_max = tl.maximum(tl.max(x, axis=1), -1.0e30) * _LOG2E
    e = tl.exp2(x * _LOG2E - scaled_max[:, None])  # one fused multiply-add an element
    total = tl.sum(e, axis=1)
    inv_total = tl.where(row_ok, 1.0 / tl.where(row_ok, total, 1.0), 0.0)
    dtype = dst.dtype.element_ty
    tl.store(dst + _padded_offsets(prow, COL_PAD + col, ROWS, CHUNK), (e * inv_total[:, None]).to(dtype),
             mask=store_ok & (col + COL_PAD < end_col)[None, :])
    border = tl.arange(0, COL_PAD)
    tl.store(dst + _padded_offsets(prow, border, ROWS, CHUNK), tl.zeros((row.shape[0], COL_PAD), dtype=dtype),
             mask=store_ok)
    blank = tl.zeros((row.shape[0], ZERO_W), dtype=dtype)
    for c0 in range(WIDTH + COL_PAD, end_col, ZERO_W):  # past the tile, so past the causal part: zeros
        pcol = c0 + tl.arange(0, ZERO_W)
        tl.store(dst + _padded_offsets(prow, pcol, ROWS, CHUNK), blank,
                 mask=store_ok & (pcol < end_col)[None, :])


@triton.autotune(configs=_pad_configs(), key=["L_UNITS", "L_ALIGN", "SOFTMAX", "CHUNK"], do_bench=device_time)
@triton.jit
def _mta_pad_kernel(src_ptr, dst_ptr, w_ptr, band_ptr, zeroed_ptr, L_UNITS, ROWS, STRIDE, PLANE,
                    L_ALIGN: tl.constexpr, ZEROED: tl.constexpr, PAD: tl.constexpr, COL_PAD: tl.constexpr,
                    SOFTMAX: tl.constexpr, FLIP: tl.constexpr,
                    C_IN: tl.constexpr, C_OUT: tl.constexpr, IN_PER_GROUP: tl.constexpr, OUT_PER_GROUP: tl.constexpr,
                    K: tl.constexpr, A_W: tl.constexpr, N: tl.constexpr, OUT_W: tl.constexpr, CHUNK: tl.constexpr,
                    IM2COL: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """Rows ``[pid * BLOCK_R, +BLOCK_R)`` of one padded plane ``dst[pr, pc] = f(src[pr - PAD, pc - COL_PAD])``.

    ``f`` is the causal softmax of the row (``SOFTMAX``) or the causally masked copy. The
    softmax reads the block's causal part once when it fits ``BLOCK_N`` columns, into the
    narrowest tile of ``BLOCK_N``, ``BLOCK_N / 2`` or ``BLOCK_N / 4`` that holds it
    (:func:`_softmax_once`); longer rows take base-2 statistics in a first pass over their
    causal part and exponentiate again in a second. Zero outside the source, above the
    diagonal and in the border. A padded row ``pr`` is written up to column
    ``floor(pr / 4W) * 4W + 5W`` (``W = OUT_W``): the last that the forward's 4-subtile
    tiles read (their taps reach one subtile past a tile; the backward's convolution of G
    reads the same, its weight kernel no further, and its scores kernel P only at causal
    positions). Any column more
    would be a line allocated, and so a write-back, for nothing. Sources are read in whole
    8-column groups (16-byte loads; ``COL_PAD`` is a multiple of 8) and masked exactly after.
    ``dst`` is chunk-major with ``CHUNK``-column chunks. The ``C_IN * K`` programs after the
    rows (plane 0 only) write the convolution's weights as banded matrices, one per (input
    head c, tap row u):
    ``band[c*K + u, a, o*OUT_W + j] = w[o, c, u, a - j + PAD - COL_PAD]`` where that tap
    exists, so that ``P_pad[c, i + u, j0 : j0 + A_W] @ band[c*K + u]`` is the (c, u) share
    of output columns ``j0 .. j0 + OUT_W``. With ``FLIP`` (the backward's transposed
    convolution, given the shape constants with input and output heads swapped), the band
    holds ``w[c, o, K - 1 - u, K - 1 - v]`` instead: G_pad convolved with it is dP. With
    ``IM2COL`` they write the rows ``(c*K + u)*K + v`` of the ``[C_IN*K*K, N]`` matrix of
    :func:`_mta_conv_im2col_kernel` instead (``A_W >= K`` rows a program, ``N`` output heads), and together
    zero the ``ZEROED`` fp32 elements at ``zeroed_ptr`` (the backward's accumulators: no memset launch). Every
    program first lets the next kernel launch (:func:`let_next_launch_start`): in the
    forward, the convolution's tiles above the diagonal then store their zeros while this
    pass runs, and its other programs are resident when it ends (benchmarks/KERNELS.md, run 15).
    Grid: ``(cdiv(ROWS, BLOCK_R) + C_IN * K, planes)``; ``ROWS`` >=
    ``L + 2 * PAD`` covers tile overhang.
    """
    L = L_UNITS * L_ALIGN
    follow_previous_launch()
    let_next_launch_start()
    pid = tl.program_id(0)
    plane = tl.program_id(1).to(tl.int64)
    row_blocks = tl.cdiv(ROWS, BLOCK_R)
    if pid < row_blocks:
        prow = pid * BLOCK_R + tl.arange(0, BLOCK_R)
        row = prow - PAD
        row_ok = (row >= 0) & (row < L)
        src = src_ptr + plane * L * L
        dst = dst_ptr + plane * PLANE
        store_ok = (prow < ROWS)[:, None]
        # the columns any tile reads (a multiple of 16, so that masks keep stores 16-byte vectors)
        end_col = tl.minimum(((pid + 1) * BLOCK_R - 1) // (4 * OUT_W) * (4 * OUT_W) + 5 * OUT_W, STRIDE)
        first_chunk = 0
        if SOFTMAX:
            causal_cols = tl.minimum((pid + 1) * BLOCK_R - PAD, L)  # source columns any row of the block keeps
            lse = tl.zeros((BLOCK_R,), dtype=tl.float32)
            if causal_cols <= BLOCK_N:  # the row block's causal part fits one tile: read once
                first_chunk = STRIDE
                if causal_cols <= BLOCK_N // 4:
                    _softmax_once(src, dst, prow, row, row_ok, store_ok, end_col, L, ROWS, CHUNK, COL_PAD,
                                  BLOCK_N // 4, BLOCK_N // 4)
                elif causal_cols <= BLOCK_N // 2:
                    _softmax_once(src, dst, prow, row, row_ok, store_ok, end_col, L, ROWS, CHUNK, COL_PAD,
                                  BLOCK_N // 2, BLOCK_N // 4)
                else:
                    _softmax_once(src, dst, prow, row, row_ok, store_ok, end_col, L, ROWS, CHUNK, COL_PAD,
                                  BLOCK_N, BLOCK_N // 4)
            else:
                m = tl.full((BLOCK_R,), -1.0e30, dtype=tl.float32)
                total = tl.zeros((BLOCK_R,), dtype=tl.float32)
                for c0 in range(0, causal_cols, BLOCK_N):
                    x = _causal_row_chunk(src, row, row_ok, c0 + tl.arange(0, BLOCK_N), L, _LOG2E, float("-inf"))
                    m_new = tl.maximum(m, tl.max(x, axis=1))
                    total = total * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new[:, None]), axis=1)
                    m = m_new
                lse = tl.where(row_ok, m + tl.log2(tl.where(row_ok, total, 1.0)), 0.0)
        for c0 in range(first_chunk, end_col, BLOCK_N):
            pcol = c0 + tl.arange(0, BLOCK_N)
            if SOFTMAX:
                x = _causal_row_chunk(src, row, row_ok, pcol - COL_PAD, L, _LOG2E, float("-inf"))
                x = tl.exp2(x - lse[:, None])
            else:
                x = _causal_row_chunk(src, row, row_ok, pcol - COL_PAD, L, 1.0, 0.0)
            tl.store(dst + _padded_offsets(prow, pcol, ROWS, CHUNK), x.to(dst_ptr.dtype.element_ty),
                     mask=store_ok & (pcol < end_col)[None, :])
    else:
        if plane == 0:
            cu = pid - row_blocks
            c = cu // K
            u = cu % K
            a = tl.arange(0, A_W)[:, None]
            n = tl.arange(0, N)[None, :]
            if IM2COL:
                o = n
                v = a
            else:
                o = n // OUT_W
                v = a - n % OUT_W + PAD - COL_PAD
            if FLIP:  # c is the weight's output head, o its input head: o's index within c's group
                w_local = o - (c // IN_PER_GROUP) * OUT_PER_GROUP
                ok = (o < C_OUT) & (w_local >= 0) & (w_local < OUT_PER_GROUP) & (v >= 0) & (v < K)
                w_index = ((c * OUT_PER_GROUP + w_local) * K + K - 1 - u) * K + K - 1 - v
            else:
                w_local = c - (o // OUT_PER_GROUP) * IN_PER_GROUP  # c's index within o's group
                ok = (o < C_OUT) & (w_local >= 0) & (w_local < IN_PER_GROUP) & (v >= 0) & (v < K)
                w_index = ((o * IN_PER_GROUP + w_local) * K + u) * K + v
            w = tl.load(w_ptr + w_index, mask=ok, other=0.0)
            if IM2COL:
                tl.store(band_ptr + (cu * K + a) * N + n, w.to(band_ptr.dtype.element_ty), mask=(a < K) & (n < N))
            else:
                tl.store(band_ptr + cu * A_W * N + a * N + n, w.to(band_ptr.dtype.element_ty))
            if ZEROED > 0:  # whole 1024-element blocks a program, so that the stores are 16 bytes wide
                share: tl.constexpr = (ZEROED + C_IN * K * 1024 - 1) // (C_IN * K * 1024) * 1024
                for start in range(cu * share, (cu + 1) * share, 1024):
                    offsets = start + tl.arange(0, 1024)
                    tl.store(zeroed_ptr + offsets, tl.zeros((1024,), dtype=tl.float32), mask=offsets < ZEROED)


# ----------------------------------------------------------------------------- forward


def _conv_configs():
    """2- or 3-stage pipelines at 168 registers, three programs per SM: ptxas gives some builds of the same loop
    176..180 (two per SM), and 4 stages spill at 168 (benchmarks/KERNELS.md, runs 14 and 15); and the same
    unrestricted, for the lengths :func:`_conv_candidates` gives them to."""
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": 64}, num_warps=4, num_stages=stages, maxnreg=registers)
            for registers in (168, None) for stages in (2, 3)]


def _conv_candidates(configs, named_args, **kwargs):
    """The convolution's configs worth timing (the autotuner's pruning hook): every one at a length with no factor
    of 16, the 168-register ones elsewhere. Unrestricted, they tied at L 768, 1024 and 256; at L 777, 4 heads, k 3,
    bf16 (H100), they took 9.2 instead of 10.5 us (182 registers against 168 and 24 bytes of stack; at 8 and 16
    heads both builds are the same 168 registers), and before the output's rows were padded (:func:`_padded_row`)
    12.7 instead of 19.2 (benchmarks/KERNELS.md, "Odd lengths' registers", "Padded rows")."""
    if kwargs["L_ALIGN"] < 16:  # a constexpr: always passed by keyword
        return configs
    return [config for config in configs if config.maxnreg]


@triton.jit
def _banded_product(acc, left, right, band_left, band_right, INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr):
    """``acc + [left, right] @ [band_left; band_right]``: one subtile's share of one (head, tap row) pair."""
    if UPCAST:  # the interpreter's 16-bit dot is wrong (Triton 3.9): multiply in fp32 there
        left, right = left.to(tl.float32), right.to(tl.float32)
        band_left, band_right = band_left.to(tl.float32), band_right.to(tl.float32)
    acc = tl.dot(left, band_left, acc=acc, input_precision=INPUT_PRECISION)
    return tl.dot(right, band_right, acc=acc, input_precision=INPUT_PRECISION)


@triton.jit
def _store_subtile(acc, bias, out_ptr, batch, rows, first_col, first_head, L, ROW, C_OUT: tl.constexpr,
                   N: tl.constexpr, OUT_W: tl.constexpr):
    """``mask0(acc + bias)`` into output columns ``first_col .. first_col + OUT_W`` of the program's output heads,
    rows ``ROW`` apart: the row's padding columns (from ``L``) get the mask's zeros, so the store's mask is constant
    along 16-byte runs."""
    n = tl.arange(0, N)
    o = first_head + n // OUT_W
    cols = first_col + n % OUT_W
    acc = tl.where(cols[None, :] <= rows[:, None], acc + bias[None, :], 0.0)
    out_planes = (batch * C_OUT + o).to(tl.int64)
    tl.store(out_ptr + out_planes[None, :] * L * ROW + rows[:, None] * ROW + cols[None, :],
             acc.to(out_ptr.dtype.element_ty), mask=(rows[:, None] < L) & ((o < C_OUT) & (cols < ROW))[None, :])


def _heads_per_program(heads_out):
    """Output heads one convolution program computes: at most 4, whose four ``[64, 4 * OUT_W]`` fp32
    accumulators fill the registers the configs allow (168 a thread); a program holding all 8 or 16 heads
    spilled them (8 -> 8 heads, k 5, L 2048: 15 ms, 1% of the floor; benchmarks/KERNELS.md)."""
    return min(next_power_of_2(heads_out), 4)


@triton.autotune(configs=_conv_configs(), key=["L_UNITS", "L_ALIGN", "C_IN", "C_OUT", "K"], do_bench=device_time,
                 prune_configs_by={"early_config_prune": _conv_candidates})
@triton.jit
def _mta_conv_fwd_kernel(p_ptr, band_ptr, bias_ptr, out_ptr, L_UNITS, STRIDE, PLANE, ROW_UNITS,
                         L_ALIGN: tl.constexpr, ROW_ALIGN: tl.constexpr, C_IN: tl.constexpr, C_OUT: tl.constexpr,
                         K: tl.constexpr, HAS_BIAS: tl.constexpr, N: tl.constexpr, HEADS: tl.constexpr,
                         OUT_W: tl.constexpr, INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr,
                         ZERO_TILES: tl.constexpr, BLOCK_M: tl.constexpr):
    """``BLOCK_M x 4*OUT_W`` output positions (four subtiles) of ``HEADS`` output heads of one batch element.

    Padded P (chunk-major: a chunk's rows are contiguous) is read in ``OUT_W``-column chunks
    ``q = 0..4``; subtile ``t`` takes chunks ``t`` and ``t + 1`` (the ``2 * OUT_W = A_W``
    columns its taps reach), so each (input head c, tap row u) pair costs five chunk loads and
    one load of ``band[c*K + u]`` (its two halves), both shared by the four subtiles:
    ``acc_t += P_pad[c, i + u, chunk t] @ band[..., :OUT_W, :] + P_pad[c, i + u, chunk t+1]
    @ band[..., OUT_W:, :]``. Operands are aligned tiles read as they lie, so Triton
    pipelines the loop as a GEMM's. Then bias and the causal mask. Programs wholly above
    the diagonal store zeros and read nothing, so they do not wait for the softmax pass (it
    writes no output): launched early (:func:`let_next_launch_start`), they run while it does. Without
    ``ZERO_TILES`` (the backward's dP, read only at causal positions) they do nothing.
    The band's rows are ``N`` wide (every output head); a program reads its heads' ``HEADS * OUT_W``
    columns. The head groups of one tile are neighbouring programs, so they share its P in L2. Output rows are
    ``ROW_UNITS * ROW_ALIGN`` elements apart (:func:`_padded_row`).
    Grid: ``(cdiv(L, BLOCK_M) * cdiv(L, 4 * OUT_W) * cdiv(C_OUT, HEADS), batch)``.
    """
    L = L_UNITS * L_ALIGN
    ROW = ROW_UNITS * ROW_ALIGN  # the output's row stride (see _padded_row)
    NB: tl.constexpr = HEADS * OUT_W
    HEAD_GROUPS: tl.constexpr = (C_OUT + HEADS - 1) // HEADS
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    first_head = (pid % HEAD_GROUPS) * HEADS
    tile = pid // HEAD_GROUPS
    num_n = tl.cdiv(L, 4 * OUT_W)
    row_block = tile // num_n
    rows = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    first_col = (tile % num_n) * 4 * OUT_W
    if first_col < (row_block + 1) * BLOCK_M:  # the program reaches the causal half
        follow_previous_launch()  # P and the banded weights come from the softmax pass
        acc0 = tl.zeros((BLOCK_M, NB), dtype=tl.float32)
        acc1 = tl.zeros((BLOCK_M, NB), dtype=tl.float32)
        acc2 = tl.zeros((BLOCK_M, NB), dtype=tl.float32)
        acc3 = tl.zeros((BLOCK_M, NB), dtype=tl.float32)
        a = tl.arange(0, OUT_W)
        n = tl.arange(0, NB)
        next_chunk = PLANE // STRIDE * OUT_W  # P is chunk-major: a plane's chunk q is rows x OUT_W at q * next_chunk
        chunk = (p_ptr + (batch * C_IN).to(tl.int64) * PLANE + (first_col // OUT_W) * next_chunk
                 + rows[:, None] * OUT_W + a[None, :])
        band = band_ptr + a[:, None] * N + first_head * OUT_W + n[None, :]
        for slot in range(C_IN * K):  # (c, u) = divmod(slot, K)
            tap = chunk + (slot // K) * PLANE + (slot % K) * OUT_W
            band_left = tl.load(band + slot * 2 * OUT_W * N)
            band_right = tl.load(band + (slot * 2 + 1) * OUT_W * N)
            p0 = tl.load(tap)
            p1 = tl.load(tap + next_chunk)
            p2 = tl.load(tap + 2 * next_chunk)
            p3 = tl.load(tap + 3 * next_chunk)
            p4 = tl.load(tap + 4 * next_chunk)
            acc0 = _banded_product(acc0, p0, p1, band_left, band_right, INPUT_PRECISION, UPCAST)
            acc1 = _banded_product(acc1, p1, p2, band_left, band_right, INPUT_PRECISION, UPCAST)
            acc2 = _banded_product(acc2, p2, p3, band_left, band_right, INPUT_PRECISION, UPCAST)
            acc3 = _banded_product(acc3, p3, p4, band_left, band_right, INPUT_PRECISION, UPCAST)
        o = first_head + tl.arange(0, NB) // OUT_W
        bias = tl.zeros((NB,), dtype=tl.float32)
        if HAS_BIAS:
            bias = tl.load(bias_ptr + o, mask=o < C_OUT, other=0.0).to(tl.float32)
        _store_subtile(acc0, bias, out_ptr, batch, rows, first_col, first_head, L, ROW, C_OUT, NB, OUT_W)
        _store_subtile(acc1, bias, out_ptr, batch, rows, first_col + OUT_W, first_head, L, ROW, C_OUT, NB, OUT_W)
        _store_subtile(acc2, bias, out_ptr, batch, rows, first_col + 2 * OUT_W, first_head, L, ROW, C_OUT, NB, OUT_W)
        _store_subtile(acc3, bias, out_ptr, batch, rows, first_col + 3 * OUT_W, first_head, L, ROW, C_OUT, NB, OUT_W)
    elif ZERO_TILES:
        cols = first_col + tl.arange(0, 4 * OUT_W)
        zeros = tl.zeros((BLOCK_M, 4 * OUT_W), dtype=out_ptr.dtype.element_ty)
        for head in range(first_head, first_head + HEADS):
            tl.store(out_ptr + (batch * C_OUT + head).to(tl.int64) * L * ROW + rows[:, None] * ROW + cols[None, :],
                     zeros, mask=(rows[:, None] < L) & (cols < ROW)[None, :] & (head < C_OUT))


def _im2col_configs():
    """Tiles of ``BLOCK_I x BLOCK_J`` positions, ``BLOCK_T`` taps a step (a probe's best at 16 heads, k 3 and 5, fp32:
    benchmarks/KERNELS.md)."""
    if _INTERPRET:
        return [triton.Config({"BLOCK_I": 4, "BLOCK_J": 16, "BLOCK_T": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_I": i, "BLOCK_J": j, "BLOCK_T": t}, num_warps=w, num_stages=stages)
            for i, j, t, w, stages in [(8, 16, 16, 4, 3), (4, 32, 16, 4, 3), (8, 16, 32, 4, 3), (16, 16, 16, 4, 3),
                                       (16, 16, 32, 8, 3), (8, 32, 16, 8, 2)]]


def _convolves_by_tap(heads_in: int) -> bool:
    """Whether :func:`_mta_conv_im2col_kernel` makes one product a tap over the input heads (``BY_TAP``): where they
    are a power of two from 16, ``tl.dot``'s depth."""
    return heads_in >= 16 and heads_in == next_power_of_2(heads_in)


def _uses_im2col(consts: dict, dtype: torch.dtype) -> bool:
    """Whether a convolution runs as :func:`_mta_conv_im2col_kernel` rather than banded: in fp32 with 16 or more
    output heads, where the banded product's ``2 * OUT_W`` products an output and tap row cost the most: at k <= 5
    (H200 forwards 1.3x-2.3x faster), and at k 7 by tap (H100, 16 heads, L 777 to 2048: forwards 1.6x-1.95x faster,
    forward and backward 1.4x-1.6x; gathered, as at 8 heads and fewer, it is up to 2.8x slower there;
    benchmarks/KERNELS.md, "k 7 by tap")."""
    return dtype == torch.float32 and consts["C_OUT"] >= 16 and (
        consts["K"] <= 5 or consts["K"] == 7 and _convolves_by_tap(consts["C_IN"]))


@triton.autotune(configs=_im2col_configs(), key=["L", "C_IN", "C_OUT", "K"], do_bench=device_time)
@triton.jit(do_not_specialize=["L", "ROW"])
def _mta_conv_im2col_kernel(p_ptr, w_ptr, bias_ptr, out_ptr, L, ROW, STRIDE, PLANE, C_IN: tl.constexpr,
                            C_OUT: tl.constexpr, N: tl.constexpr, K: tl.constexpr, SHIFT: tl.constexpr,
                            HAS_BIAS: tl.constexpr, INPUT_PRECISION: tl.constexpr, ZERO_TILES: tl.constexpr,
                            BY_TAP: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr,
                            BLOCK_T: tl.constexpr):
    """The convolution as one GEMM a tile: ``out[(i, j), o] = sum_t P_pad[c, i + u, j + v + SHIFT] * w[t, o]`` over
    the taps ``t = (c*K + u)*K + v``, for ``BLOCK_I x BLOCK_J`` positions and every output head (``N`` >= 16).

    Only the convolution's own products are made (the banded kernel makes ``2 * OUT_W`` an output and tap row, where
    ``K`` are needed), but the left operand is read one element a (position, tap) from padded P, which neighbouring
    tiles share in L2. P is row-major here (one chunk a row, see :class:`_Padding`), so an element's address is the sum
    of a position's offset and a tap's: one addition an element. ``BY_TAP`` (``C_IN`` a power of two from 16) makes
    one product a tap, over the input heads: each operand a window of P shifted by the tap; otherwise ``BLOCK_T``
    taps a product, gathered (H100, 16 heads, k 5, fp32: 2.6x faster by tap; benchmarks/KERNELS.md, "A length
    Triton knows too much of"). ``SHIFT = COL_PAD - PAD``. Positions past the
    diagonal read columns P_pad may not have written: only their own rows of the product see them, and they are
    stored as zeros. Tiles wholly above the diagonal store zeros (``ZERO_TILES``) or nothing.

    ``L`` and the output's row stride ``ROW`` (:func:`_padded_row`) are not specialized: told that they divide by
    16 (as ``L_UNITS * L_ALIGN`` does elsewhere here), Triton lays the tile out for 16-byte stores and the
    convolution took 2.6x-4.4x as long at L 1000, 1024 and 2048.
    Grid: ``(cdiv(L, BLOCK_I) * cdiv(L, BLOCK_J), batch)``.
    """
    TAPS: tl.constexpr = C_IN * K * K
    M: tl.constexpr = BLOCK_I * BLOCK_J
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_j = tl.cdiv(L, BLOCK_J)
    row_block = pid // num_j
    col_block = pid % num_j
    m = tl.arange(0, M)
    i = row_block * BLOCK_I + m // BLOCK_J
    j = col_block * BLOCK_J + m % BLOCK_J
    o = tl.arange(0, N)
    out_offsets = (batch * C_OUT + o).to(tl.int64)[None, :] * L * ROW + (i * ROW + j)[:, None]
    store_ok = ((i < L) & (j < L))[:, None] & (o < C_OUT)[None, :]
    if col_block * BLOCK_J < (row_block + 1) * BLOCK_I:  # the tile reaches the causal half
        follow_previous_launch()  # P_pad and the weights come from the padding pass
        acc = tl.zeros((M, N), dtype=tl.float32)
        # P_pad[0, i, j + SHIFT]; positions past L (stored nowhere) read row or column L - 1's, inside the plane
        first = tl.minimum(i, L - 1) * STRIDE + tl.minimum(j, L - 1) + SHIFT
        position = p_ptr + (batch * C_IN).to(tl.int64) * PLANE + first[:, None]
        if BY_TAP:
            c = tl.arange(0, C_IN)
            channel = (c.to(tl.int64) * PLANE)[None, :]
            for u in tl.static_range(K):
                for v in tl.static_range(K):
                    a = tl.load(position + channel + (u * STRIDE + v))
                    w = tl.load(w_ptr + ((c * K + u) * K + v)[:, None] * N + o[None, :])
                    acc = tl.dot(a, w, acc=acc, input_precision=INPUT_PRECISION)
        else:
            for t0 in range(0, TAPS, BLOCK_T):
                t = t0 + tl.arange(0, BLOCK_T)
                tap = (t // (K * K)).to(tl.int64) * PLANE + (t // K % K) * STRIDE + t % K
                if TAPS % BLOCK_T == 0:
                    a = tl.load(position + tap[None, :])
                    w = tl.load(w_ptr + t[:, None] * N + o[None, :])
                else:
                    a = tl.load(position + tap[None, :], mask=(t < TAPS)[None, :], other=0.0)
                    w = tl.load(w_ptr + t[:, None] * N + o[None, :], mask=(t < TAPS)[:, None], other=0.0)
                acc = tl.dot(a, w, acc=acc, input_precision=INPUT_PRECISION)
        # a bias added even when there is none, as the banded kernel does: with tl.where straight on the product the
        # backward's dP came out all zeros on the H200 (Triton 3.6; the interpreter was right), with it 8e-4 from
        # float64 (benchmarks/KERNELS.md)
        bias = tl.zeros((N,), dtype=tl.float32)
        if HAS_BIAS:
            bias = tl.load(bias_ptr + o, mask=o < C_OUT, other=0.0).to(tl.float32)
        acc = tl.where((j <= i)[:, None], acc + bias[None, :], 0.0)
        tl.store(out_ptr + out_offsets, acc.to(out_ptr.dtype.element_ty), mask=store_ok)
    elif ZERO_TILES:
        tl.store(out_ptr + out_offsets, tl.zeros((M, N), dtype=out_ptr.dtype.element_ty), mask=store_ok)


# ----------------------------------------------------------------------------- backward


@triton.jit
def _program_replica(acc_ptr, W_NUMEL: tl.constexpr, C_OUT: tl.constexpr, REPLICAS: tl.constexpr):
    """The copy of dW and dbias in ``acc`` that this program adds into: ``acc`` holds ``REPLICAS`` of them, each
    ``W_NUMEL`` weights then ``C_OUT`` biases (:func:`_sum_replicas` adds them up), one chosen by program so that
    programs do not queue on the same addresses."""
    program = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0)
    return acc_ptr + program % REPLICAS * (W_NUMEL + C_OUT)


@triton.jit
def _mta_bwd_weight_strips_kernel(g_ptr, p_ptr, acc_ptr, L_UNITS, ROWS, PLANE, STRIPS, L_ALIGN: tl.constexpr,
                                  C_IN: tl.constexpr, C_OUT: tl.constexpr, IN_PER_GROUP: tl.constexpr,
                                  OUT_PER_GROUP: tl.constexpr, K: tl.constexpr, COL_PAD: tl.constexpr,
                                  CHUNK: tl.constexpr, REPLICAS: tl.constexpr, UPCAST: tl.constexpr,
                                  HEADS_OUT: tl.constexpr, HEADS_IN: tl.constexpr, BLOCK_I: tl.constexpr,
                                  BLOCK_J: tl.constexpr, WINDOW: tl.constexpr, ALIGN: tl.constexpr,
                                  OFFSET: tl.constexpr):
    """The weight gradient's share of one tap row ``u``, a strip of ``BLOCK_J`` columns from ``j0`` (all its causal
    rows) and blocks of ``HEADS_OUT`` output and ``HEADS_IN`` input heads, without a gather::

        R[(o, jj), (c, x)] = sum_i G_pad[o, i + p, j0 + jj + cp] * P_pad[c, i + u, j0 + x - OFFSET - p + cp]
        dW[o, c, u, v] += sum_jj R[(o, jj), (c, jj + v + OFFSET)]                         (x < WINDOW)

    R is one product a step of ``BLOCK_I`` rows, ``g^T [HEADS_OUT * BLOCK_J, rows] @ P [rows, HEADS_IN * WINDOW]``,
    and the ``K`` column taps are read off its diagonals once, at the end. Both operands are plain tiles of the
    padded planes, which share one layout (chunk-major: 16-bit operands never take the im2col convolution's
    row-major one): G's strip starts on a 16-byte boundary (of any L: G_pad rather than g), and P's window
    ``OFFSET`` columns early, on one of ``ALIGN`` elements. Steps are masked by row alone, so that their loads are
    vectors (a mask that varies along a row splits a load into single elements: what the im2col form this replaces,
    ``g @ X`` with X every tap's shifted P, did, at 17x its memory floor; benchmarks/KERNELS.md). The strip's first
    step crosses the diagonal and reads past the causal part, harmlessly: G_pad is zero above the diagonal, and
    ``_mta_pad_kernel`` writes every padded row from ``j0`` on up to ``CHUNK + BLOCK_J`` columns past ``j0`` (its
    bound's ``W`` being ``CHUNK``), which covers G's columns and, at most k, P's window (up to k 17 in 16-column
    strips, 9 in 8-column ones). Where P's window reaches further, that step alone is masked by column. The products
    do ``WINDOW / K`` times the useful work, on tensor cores that were idle. The programs after the ``STRIPS``
    weight programs sum g for ``dbias``. Both go atomically into one of ``REPLICAS`` copies in ``acc``, chosen by
    program, so that programs do not queue on the same addresses. Grid: ``(STRIPS + cdiv(L, BLOCK_J) * out_blocks,
    batch)``, ``STRIPS = cdiv(L, BLOCK_J) * K * in_blocks * out_blocks``, the longest strips (first columns) first.
    """
    L = L_UNITS * L_ALIGN
    follow_previous_launch()
    tl.static_assert(BLOCK_I >= WINDOW)  # rows past the first step read P only where the pad wrote it
    M: tl.constexpr = HEADS_OUT * BLOCK_J
    N: tl.constexpr = HEADS_IN * WINDOW
    IN_BLOCKS: tl.constexpr = (C_IN + HEADS_IN - 1) // HEADS_IN
    OUT_BLOCKS: tl.constexpr = (C_OUT + HEADS_OUT - 1) // HEADS_OUT
    W_NUMEL: tl.constexpr = C_OUT * IN_PER_GROUP * K * K
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    copy = _program_replica(acc_ptr, W_NUMEL, C_OUT, REPLICAS)
    strip = tl.where(pid < STRIPS, pid // (K * IN_BLOCKS), pid - STRIPS)  # (columns, output heads)
    j0 = strip // OUT_BLOCKS * BLOCK_J
    out_block = strip % OUT_BLOCKS
    r = tl.arange(0, BLOCK_I)
    m = tl.arange(0, M)
    o = out_block * HEADS_OUT + m // BLOCK_J
    jj = m % BLOCK_J
    g_strip = g_ptr + _strip_columns((batch * C_OUT + o).to(tl.int64) * PLANE, j0 + COL_PAD, jj, ROWS, CHUNK,
                                     BLOCK_J if BLOCK_J < 8 else 8)[None, :]
    out_ok = (o < C_OUT)[None, :]
    if pid >= STRIPS:
        _bias_strip(g_strip, copy + W_NUMEL, j0, r, out_ok, out_block, L, C_OUT, K, CHUNK, HEADS_OUT, BLOCK_I,
                    BLOCK_J)
        return
    u = pid % K
    in_block = pid // K % IN_BLOCKS
    n = tl.arange(0, N)
    c = in_block * HEADS_IN + n // WINDOW
    x = n % WINDOW
    p_strip = p_ptr + _strip_columns((batch * C_IN + c).to(tl.int64) * PLANE, j0 + COL_PAD - K // 2 - OFFSET, x,
                                     ROWS, CHUNK, ALIGN)[None, :]
    in_ok = (c < C_IN)[None, :]
    grad_w = tl.zeros((M, N), dtype=tl.float32)
    first_unmasked = j0
    if WINDOW - OFFSET - K // 2 + COL_PAD > CHUNK + BLOCK_J:  # P's window reaches past the written columns
        i = (j0 + r)[:, None]
        grad_w = _strip_product(grad_w, g_strip + (i + K // 2) * CHUNK, p_strip + (i + u) * CHUNK,
                                out_ok & (i < L) & ((j0 + jj)[None, :] <= i),
                                in_ok & (i < L) & ((j0 + x)[None, :] <= i + K - 1 + OFFSET), UPCAST)
        first_unmasked += BLOCK_I
    for i0 in range(first_unmasked, L, BLOCK_I):
        i = (i0 + r)[:, None]
        grad_w = _strip_product(grad_w, g_strip + (i + K // 2) * CHUNK, p_strip + (i + u) * CHUNK,
                                out_ok & (i < L), in_ok & (i < L), UPCAST)
    taps = tl.reshape(grad_w, (HEADS_OUT, BLOCK_J, HEADS_IN, WINDOW))
    diagonal = tl.arange(0, WINDOW)[None, None, None, :] - tl.arange(0, BLOCK_J)[None, :, None, None] - OFFSET
    outs = out_block * HEADS_OUT + tl.arange(0, HEADS_OUT)[:, None]
    ins = in_block * HEADS_IN + tl.arange(0, HEADS_IN)[None, :]
    w_local = ins - (outs // OUT_PER_GROUP) * IN_PER_GROUP  # c's index within o's group
    in_group = (outs < C_OUT) & (ins < C_IN) & (w_local >= 0) & (w_local < IN_PER_GROUP)
    w_row = copy + ((outs * IN_PER_GROUP + w_local) * K + u) * K
    for v in tl.static_range(K):
        tap = tl.sum(tl.sum(tl.where(diagonal == v, taps, 0.0), axis=3), axis=1)
        tl.atomic_add(w_row + v, tap, mask=in_group)


@triton.jit
def _strip_columns(planes, first_col, x, ROWS, CHUNK: tl.constexpr, ALIGN: tl.constexpr):
    """Offsets of columns ``first_col + x`` in row 0 of the chunk-major padded planes that start at ``planes``,
    declared as runs of ``ALIGN`` from multiples of ``ALIGN`` (the caller's columns are; Triton cannot prove it
    through the chunk arithmetic, and without it loads one element at a time)."""
    offsets = planes + _chunk_major_column(first_col + x, ROWS, CHUNK)
    return tl.max_contiguous(tl.multiple_of(offsets, ALIGN), ALIGN)


@triton.jit
def _strip_product(grad_w, g_tile, p_tile, g_ok, p_ok, UPCAST: tl.constexpr):
    """``grad_w + g^T @ P`` of one step's tiles."""
    g = tl.load(g_tile, mask=g_ok, other=0.0)
    p = tl.load(p_tile, mask=p_ok, other=0.0)
    if UPCAST:  # the interpreter's 16-bit dot is wrong (Triton 3.9): multiply in fp32 there
        g, p = g.to(tl.float32), p.to(tl.float32)
    return tl.dot(tl.trans(g), p, acc=grad_w)


@triton.jit
def _bias_strip(g_strip, dbias_ptr, j0, r, out_ok, out_block, L, C_OUT: tl.constexpr, K: tl.constexpr,
                CHUNK: tl.constexpr, HEADS_OUT: tl.constexpr, BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr):
    """``dbias[o] += sum g[o]`` over one strip's causal rows, for ``HEADS_OUT`` heads, read as the weight
    programs read g."""
    sums = tl.zeros((BLOCK_I, HEADS_OUT * BLOCK_J), dtype=tl.float32)
    for i0 in range(j0, L, BLOCK_I):  # G_pad is written, and zero above the diagonal, where a strip's rows reach
        i = (i0 + r)[:, None]
        sums += tl.load(g_strip + (i + K // 2) * CHUNK, mask=out_ok & (i < L), other=0.0).to(tl.float32)
    heads = out_block * HEADS_OUT + tl.arange(0, HEADS_OUT)
    tl.atomic_add(dbias_ptr + heads, tl.sum(tl.reshape(tl.sum(sums, axis=0), (HEADS_OUT, BLOCK_J)), axis=1),
                  mask=heads < C_OUT)


@triton.jit
def _causal_g(g_ptr, g_planes, outs, i, j, L, C_OUT: tl.constexpr):
    """``g[o, i, j]`` for the output heads ``outs`` (``g_planes``: their planes' offsets) at positions ``(i, j)``:
    zero past the diagonal, past ``L`` and for heads past ``C_OUT``."""
    return tl.load(g_ptr + g_planes[:, None] + (i * L + j)[None, :],
                   mask=(outs < C_OUT)[:, None] & ((i < L) & (j <= i))[None, :], other=0.0)


@triton.jit
def _mta_bwd_weight_im2col_kernel(g_ptr, p_ptr, acc_ptr, L_UNITS, STRIDE, PLANE, L_ALIGN: tl.constexpr,
                                  C_IN: tl.constexpr, C_OUT: tl.constexpr, C_OUT_P: tl.constexpr,
                                  IN_PER_GROUP: tl.constexpr, OUT_PER_GROUP: tl.constexpr, K: tl.constexpr,
                                  COL_PAD: tl.constexpr, CHUNK: tl.constexpr, ROW_MAJOR: tl.constexpr,
                                  HAS_BIAS: tl.constexpr, REPLICAS: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                                  BLOCK_I: tl.constexpr, BLOCK_J: tl.constexpr, BLOCK_T: tl.constexpr):
    """The weight gradient's share of ``BLOCK_I`` whole causal rows of positions and of ``BLOCK_T`` (input head,
    tap) pairs ``t = (c * K + u) * K + v``, on the tensor cores:
    ``dW[o, c, u, v] += sum_{i, j <= i} g[o, i, j] * P[c, i + u - p, j + v - p]`` as one product a step of
    ``BLOCK_J`` columns, ``X [BLOCK_T, positions] @ g^T [positions, C_OUT_P]`` (dW transposed), where
    ``X[t, (i, j)] = P_pad[c, i + u, j + v - p + cp]`` gathers every tap's shifted P at once (im2col). So g is
    read once per step, not once per tap, and each product is ``BLOCK_T`` tall (a product per tap reloaded g for
    every tap: 2.4 of 2.9 ms at 8 heads, k 5, L 2048 on the H200). The taps are the product's rows, 64 of them,
    the height of a Hopper warpgroup's product, where the 16 output heads were: the kernel took 1.4-1.7x less
    time on the H100 (16 heads, k 5, L 1024: 1,322 -> 902 us; benchmarks/KERNELS.md, "The weight gradient's
    product turned over").

    X's offsets are computed once: a step ``BLOCK_J`` columns on (a whole number of chunks, or P row-major:
    ``ROW_MAJOR``) moves every element by the same amount, so the loop adds one scalar where it computed each
    element's chunk-major address. A program takes whole rows, so that it adds its partial dW atomically once per
    ``BLOCK_I`` rows rather than per few hundred positions; the longest rows come first, the short ones fill the
    tail. (Both together took 14-22% off the kernel; the single-element gather is most of what is left:
    KERNELS.md, "The MTA backward, stage by stage".) Also ``dbias[o] += sum g[o]``, by the first tap block's
    programs in a loop of their own over their rows of g: summed in the product's loop, every program read g back
    from shared memory and reduced it each step (H200: 11.6% of the kernel at 16 heads, k 7, L 777; KERNELS.md,
    "Where the weight gradient's time goes"). Both go atomically into one of ``REPLICAS`` copies in ``acc``, chosen
    by program, so that programs do not queue on the same addresses.
    Grid: ``(cdiv(L, BLOCK_I) * cdiv(C_IN * K * K, BLOCK_T), batch)``.
    """
    L = L_UNITS * L_ALIGN
    follow_previous_launch()
    tl.static_assert(ROW_MAJOR or BLOCK_J % CHUNK == 0)
    TAPS: tl.constexpr = C_IN * K * K
    TAP_BLOCKS: tl.constexpr = (TAPS + BLOCK_T - 1) // BLOCK_T
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    tap_block = pid % TAP_BLOCKS
    first_row = (tl.cdiv(L, BLOCK_I) - 1 - pid // TAP_BLOCKS) * BLOCK_I  # the longest rows first
    position = tl.arange(0, BLOCK_I * BLOCK_J)
    i = first_row + position // BLOCK_J
    column = position % BLOCK_J
    outs = tl.arange(0, C_OUT_P)
    g_planes = (batch * C_OUT + outs).to(tl.int64) * L * L
    t = tap_block * BLOCK_T + tl.arange(0, BLOCK_T)
    c = t // (K * K)
    u = t // K % K
    v = t % K
    tap_ok = t < TAPS
    rows = PLANE // STRIDE
    planes = p_ptr + (batch * C_IN + c).to(tl.int64) * PLANE  # P_pad[c]
    # X's offsets within its planes (32 bits) in the first step's columns, as [positions, taps]: Triton 3.6 puts a
    # warp's lanes along the axis it finds contiguous, and the first where it finds none (chunk-major P), so that
    # way round they run along positions, which neighbour in memory; row-major, the offsets are left as plain sums,
    # whose contiguity Triton sees (through _chunk_major_column's % and // it does not). Lanes along the taps, the
    # kernel took 1.3x-2.1x longer on the H100 (KERNELS.md, "X's layout").
    x_columns = (v - K // 2 + COL_PAD)[None, :] + column[:, None]
    if not ROW_MAJOR:
        x_columns = _chunk_major_column(x_columns, rows, CHUNK)
    x_offsets = (u * CHUNK)[None, :] + (i * CHUNK)[:, None] + x_columns
    grad_w = tl.zeros((BLOCK_T, C_OUT_P), dtype=tl.float32)  # transposed
    grad_b = tl.zeros((C_OUT_P,), dtype=tl.float32)
    for first_col in range(0, tl.minimum(first_row + BLOCK_I, L), BLOCK_J):
        j = first_col + column
        causal = (i < L) & (j <= i)
        g = _causal_g(g_ptr, g_planes, outs, i, j, L, C_OUT)
        shift = first_col if ROW_MAJOR else first_col // CHUNK * (rows * CHUNK)
        x = tl.trans(tl.load(planes[None, :] + shift + x_offsets, mask=causal[:, None] & tap_ok[None, :], other=0.0))
        grad_w = tl.dot(x, tl.trans(g), acc=grad_w, input_precision=INPUT_PRECISION)
    if HAS_BIAS:
        if tap_block == 0:
            for first_col in range(0, tl.minimum(first_row + BLOCK_I, L), BLOCK_J):
                g = _causal_g(g_ptr, g_planes, outs, i, first_col + column, L, C_OUT)
                grad_b += tl.sum(g.to(tl.float32), axis=1)
    copy = _program_replica(acc_ptr, C_OUT * IN_PER_GROUP * K * K, C_OUT, REPLICAS)
    w_local = c[:, None] - (outs[None, :] // OUT_PER_GROUP) * IN_PER_GROUP  # c's index within o's group
    in_group = (outs < C_OUT)[None, :] & tap_ok[:, None] & (w_local >= 0) & (w_local < IN_PER_GROUP)
    tl.atomic_add(copy + (outs[None, :] * IN_PER_GROUP + w_local) * (K * K) + (t % (K * K))[:, None], grad_w,
                  mask=in_group)
    if HAS_BIAS:
        if tap_block == 0:
            tl.atomic_add(copy + C_OUT * IN_PER_GROUP * K * K + outs, grad_b, mask=outs < C_OUT)


def _bwd_scores_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 8, "BLOCK_N": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w)
            for m, n, w in [(16, 128, 4), (16, 256, 8), (32, 128, 8), (64, 64, 8), (8, 512, 8)]]


@triton.autotune(configs=_bwd_scores_configs(), key=["L_UNITS", "L_ALIGN", "C_IN"], do_bench=device_time)
@triton.jit
def _mta_bwd_scores_kernel(p_ptr, dp_ptr, acc_ptr, ds_ptr, dw_ptr, db_ptr, L_UNITS, STRIDE, PLANE, ROW_UNITS,
                           L_ALIGN: tl.constexpr, ROW_ALIGN: tl.constexpr, C_IN: tl.constexpr, C_OUT: tl.constexpr,
                           IN_PER_GROUP: tl.constexpr, K: tl.constexpr, COL_PAD: tl.constexpr, CHUNK: tl.constexpr,
                           HAS_BIAS: tl.constexpr, REPLICAS: tl.constexpr, BLOCK_M: tl.constexpr,
                           BLOCK_N: tl.constexpr):
    """``dscores = P * (dP - delta)``, ``delta[r] = sum_s dP * P``, for ``BLOCK_M`` rows of one input head's plane:
    the causal columns once for delta, again (mostly from L2) for dscores, then zeros to the row's end.

    First, every program sums a slice of the accumulated dW and dbias replicas and stores it in their dtype (the
    weight kernel has finished: same stream). dP's rows are ``ROW_UNITS * ROW_ALIGN`` apart, as the convolution
    wrote them. Grid: ``(cdiv(L, BLOCK_M), batch * C_IN)``.
    """
    L = L_UNITS * L_ALIGN
    ROW = ROW_UNITS * ROW_ALIGN
    follow_previous_launch()
    block = tl.program_id(0)
    plane = tl.program_id(1).to(tl.int64)
    _sum_replicas(acc_ptr, dw_ptr, db_ptr, C_OUT * IN_PER_GROUP * K * K, C_OUT, HAS_BIAS,
                  tl.program_id(1) * tl.num_programs(0) + block, tl.num_programs(0) * tl.num_programs(1), REPLICAS)
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    causal_end = tl.minimum((block + 1) * BLOCK_M, ROW)  # a multiple of 8: see _causal_probs_and_dprobs
    probs_plane = p_ptr + plane * PLANE
    dprobs_plane = dp_ptr + plane * L * ROW
    delta = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for c0 in range(0, causal_end, BLOCK_N):
        probs, dprobs = _causal_probs_and_dprobs(probs_plane, dprobs_plane, rows, c0, causal_end, L, ROW, STRIDE,
                                                 PLANE, K, COL_PAD, CHUNK, BLOCK_N)
        delta += tl.sum(probs * dprobs, axis=1)
    for c0 in range(0, L, BLOCK_N):
        grad = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if c0 < causal_end:
            probs, dprobs = _causal_probs_and_dprobs(probs_plane, dprobs_plane, rows, c0, causal_end, L, ROW,
                                                     STRIDE, PLANE, K, COL_PAD, CHUNK, BLOCK_N)
            grad = probs * (dprobs - delta[:, None])
        cols = c0 + tl.arange(0, BLOCK_N)
        tl.store(ds_ptr + plane * L * L + rows[:, None] * L + cols[None, :], grad.to(ds_ptr.dtype.element_ty),
                 mask=(rows < L)[:, None] & (cols < L)[None, :])


@triton.jit
def _sum_replicas(acc_ptr, dw_ptr, db_ptr, w_numel, b_numel, HAS_BIAS: tl.constexpr, program, programs,
                  REPLICAS: tl.constexpr):
    """dW and dbias (if ``HAS_BIAS``) from their ``REPLICAS`` fp32 copies in ``acc`` (each ``w_numel`` weights then
    ``b_numel`` biases), in slices of 32 spread over all ``programs``: one program summing every replica in turn
    waited on L2 once a replica, 64 times in a row, and ended last (benchmarks/KERNELS.md, "The replicas' sum")."""
    SLICE: tl.constexpr = 32
    numel = w_numel + b_numel if HAS_BIAS else w_numel
    for start in range(program * SLICE, numel, programs * SLICE):
        index = start + tl.arange(0, SLICE)
        copies = acc_ptr + tl.arange(0, REPLICAS)[:, None] * (w_numel + b_numel) + index[None, :]
        total = tl.sum(tl.load(copies, mask=(index < numel)[None, :], other=0.0), axis=0)
        tl.store(dw_ptr + index, total.to(dw_ptr.dtype.element_ty), mask=index < w_numel)
        tl.store(db_ptr + index - w_numel, total.to(db_ptr.dtype.element_ty), mask=(index >= w_numel) & (index < numel))


@triton.jit
def _causal_probs_and_dprobs(probs_plane, dprobs_plane, rows, c0, causal_end, L, ROW, STRIDE, PLANE,
                             K: tl.constexpr, COL_PAD: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr):
    """P (from the padded, chunk-major plane) and dP (fp32) at the causal positions of ``rows`` x ``BLOCK_N``
    columns from ``c0``; 0 elsewhere. Loaded up to the row block's ``causal_end`` (its end, or dP's padded row
    ``ROW``: a multiple of 8, so the mask is constant along runs that many columns long) and the triangle zeroed
    after: under the triangle's own mask, which varies along a row, every load was a single element (sm_90, Triton
    3.6, fp32: the two loops' 64 ``LDG.E`` -> 16 ``LDG.E.128``; benchmarks/KERNELS.md, "The scores' kernel's
    loads"). dP above the diagonal may never have been written (NaN): ``tl.where`` drops it, where a product would
    not."""
    cols = c0 + tl.arange(0, BLOCK_N)
    inside = (rows < L)[:, None] & (cols < causal_end)[None, :]
    probs = tl.load(probs_plane + _padded_offsets(rows + K // 2, cols + COL_PAD, PLANE // STRIDE, CHUNK),
                    mask=inside, other=0.0)
    dprobs = tl.load(dprobs_plane + rows[:, None] * ROW + cols[None, :], mask=inside, other=0.0)
    causal = cols[None, :] <= rows[:, None]
    return tl.where(causal, probs.to(tl.float32), 0.0), tl.where(causal, dprobs, 0.0)


# ----------------------------------------------------------------------------- launchers

_REPLICAS = 64  # copies of the dW / dbias accumulators (see the weight kernels)
_STRIP_TILES = ((8, (32, 8, 4, 4)), (1, (32, 16, 8, 4)))
"""``(fewest output heads, (BLOCK_I, BLOCK_J, ALIGN, warps))`` of the 16-bit weight kernel
(:func:`_mta_bwd_weight_strips_kernel`; not autotuned, as it adds atomically): the first whose head count the
output heads reach. ALIGN is that of P's window, in elements. From 8 output heads, strips of 8 columns with a
window aligned to 4 take 16 columns of P for k 3 to 7 (16-column strips take 32: twice the products) and a program
holds up to 16 output heads: on the H200 the weight gradient took 22-43% less time at 16 heads (k 3 to 7, L 256 to
3000) and 7-13% less at 8; at 4 heads, where those products shrink to 32 x 64, 18% more (benchmarks/KERNELS.md,
"Narrow strips")."""
_IM2COL_WEIGHT_BLOCKS = (1, 32, 64, 4)
"""BLOCK_I, BLOCK_J, the widest BLOCK_T and num_warps of the fp32 weight kernel (:func:`_mta_bwd_weight_im2col_kernel`;
not autotuned either): 32 positions a step, whose gathered operand is then 8 KB (fp32 operands are split in two
for three TF32 products; at 512 positions they spilled, and the tf32x3 backward took 320 ms at 8 heads, k 5,
L 2048 on the H200)."""


def _strip_tiles(heads_out: int) -> tuple[int, int, int, int]:
    """The :data:`_STRIP_TILES` entry for ``heads_out`` output heads."""
    return next(tiles for fewest, tiles in _STRIP_TILES if heads_out >= fewest)


def _strip_blocks(k: int, heads_in: int, heads_out: int) -> dict:
    """The strips kernel's blocks: :func:`_strip_tiles`, an aligned window of P wide enough for a strip's taps, as
    many heads a program as keep R within 128 x 128 (``tl.dot`` wants 16 rows and columns at least), and warps for
    R's size."""
    block_i, block_j, align, warps = _strip_tiles(heads_out)
    offset = (_col_pad(k) - k // 2) % align
    window = next_power_of_2(block_j + k - 1 + offset)
    heads_out = min(max(next_power_of_2(heads_out), 16 // block_j), 128 // block_j)
    heads_in = min(next_power_of_2(heads_in), max(1, 128 // window))
    return dict(BLOCK_I=max(block_i, window), BLOCK_J=block_j, WINDOW=window, ALIGN=align, OFFSET=offset,
                HEADS_OUT=heads_out, HEADS_IN=heads_in,
                num_warps=max(warps, heads_out * block_j * heads_in * window // 2048))


def _im2col_weight_blocks(chunk: int, row_major: bool) -> tuple[int, int, int, int]:
    """:data:`_IM2COL_WEIGHT_BLOCKS`, with steps of whole chunks where P is chunk-major
    (``_mta_bwd_weight_im2col_kernel`` moves a step's offsets by one constant): as many positions, fewer rows."""
    block_i, block_j, widest, warps = _IM2COL_WEIGHT_BLOCKS
    if not row_major and block_j % chunk:
        block_i, block_j = max(1, block_i * block_j // chunk), chunk
    return block_i, block_j, widest, warps


def _tap_block(taps: int, widest: int) -> int:
    """The (input head, tap) pairs one im2col weight-kernel program takes: all of them up to ``widest``, at least 16
    (``tl.dot``'s narrowest operand)."""
    return min(max(next_power_of_2(taps), 16), widest)


_launch_pad = Launcher(_mta_pad_kernel)
_launch_conv_fwd = Launcher(_mta_conv_fwd_kernel)
_launch_conv_im2col = Launcher(_mta_conv_im2col_kernel)
_launch_bwd_weight_strips = Launcher(_mta_bwd_weight_strips_kernel)
_launch_bwd_weight_im2col = Launcher(_mta_bwd_weight_im2col_kernel)
_launch_bwd_scores = Launcher(_mta_bwd_scores_kernel)


def _length(seq: int) -> tuple[int, int]:
    """``(L_UNITS, L_ALIGN)``, as every kernel here takes the length: ``L = L_UNITS * L_ALIGN``, ``L_ALIGN`` the
    largest power of two up to 16 that divides it. Triton specializes an integer argument on its divisibility by 16
    alone, so at L 3000 it took every row offset ``r * L`` for an odd number and moved the scores, the output and
    the gradients an element at a time; as a multiple of a constexpr 8 their rows move 16 bytes at a time (sm_90
    PTX: the softmax pass's row loads 128 ``ld.global.b16`` -> 15 ``ld.global.v4.b32``, the convolution's stores
    160 ``st.global.b16`` -> 32 ``st.global.v4.b32``; benchmarks/KERNELS.md, "Lengths that are no multiple of 16")."""
    align = math.gcd(seq, 16)
    return seq // align, align


def _padded_row(seq: int) -> int:
    """The row stride of the output and of the backward's dP: ``seq`` rounded up to a multiple of 8, so that every
    row starts on 16 bytes and the convolution stores it 16 bytes at a time. Rows stored an element at a time from
    misaligned starts took it 32.0 us at 8 heads, k 3, L 777, fp16 where L 784 takes 22.4; with padded rows 22.1
    (H100; 139.8 -> 114.2 at 16 heads, k 5; benchmarks/KERNELS.md, "Padded rows")."""
    return cdiv(seq, 8) * 8


def _padded_rows(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """An uninitialised ``[batch, heads, seq, seq]`` tensor whose rows are :func:`_padded_row` apart: a view of a
    buffer that holds the last row's padding too, which the convolution writes."""
    batch, heads, seq, _ = shape
    row = _padded_row(seq)
    buffer = torch.empty(batch, heads, seq, row, device=device, dtype=dtype)
    return buffer if row == seq else buffer[..., :seq]


def _shape_constants(heads_in: int, weight_shape, groups: int) -> dict:
    heads_out, in_per_group, k, _ = weight_shape
    return dict(C_IN=heads_in, C_OUT=heads_out, IN_PER_GROUP=in_per_group, OUT_PER_GROUP=heads_out // groups,
                K=k, COL_PAD=_col_pad(k))


def _transposed(consts):
    """The shape constants of the backward's transposed convolution: input and output heads swapped."""
    return {**consts, "C_IN": consts["C_OUT"], "C_OUT": consts["C_IN"], "IN_PER_GROUP": consts["OUT_PER_GROUP"],
            "OUT_PER_GROUP": consts["IN_PER_GROUP"]}


def _band_shape(consts):
    """``[C_IN * K, A_W, N]``: the forward's banded weights (see ``_mta_pad_kernel``), ``A_W = 2 * OUT_W``."""
    out_w = _subtile_width(consts["K"])
    return consts["C_IN"] * consts["K"], 2 * out_w, next_power_of_2(consts["C_OUT"]) * out_w


def _im2col_shape(consts):
    """``[C_IN * K, K, N]``: the im2col convolution's weights (see ``_mta_conv_im2col_kernel``), ``N >= 16``."""
    return consts["C_IN"] * consts["K"], consts["K"], max(next_power_of_2(consts["C_OUT"]), 16)


def _padded_plane(seq: int, k: int) -> tuple[int, int]:
    """``(rows, stride)`` of a plane of padded P or G (:class:`_Padding`): ``k // 2`` rows above and below those of
    the tallest tiles that cover ``seq``; columns for the forward's 4-subtile steps and the backward's taps, 128-byte
    aligned."""
    out_w = _subtile_width(k)
    rows = cdiv(seq, _MAX_BLOCK_M) * _MAX_BLOCK_M + 2 * (k // 2)
    widest = max(cdiv(seq, 4 * out_w) * 4 * out_w + out_w,  # forward programs: 5 chunks from 4-subtile steps
                 cdiv(seq, _MAX_BLOCK_N) * _MAX_BLOCK_N + _col_pad(k) + k // 2)  # backward taps
    return rows, cdiv(widest, 64) * 64  # rows 128-byte aligned


class _Padding:
    """The launch of ``_mta_pad_kernel`` at one shape: ``source [batch, heads, L, L]`` -> its zero-bordered causal
    softmax (or masked copy), padded by ``k // 2`` rows and ``COL_PAD`` columns, and the weights of the convolution
    that reads it, banded or for the im2col kernel as :func:`_uses_im2col` says (the forward's of ``weight``, or
    with the masked copy G the backward's transposed one: ``consts`` swapped).

    Both are stored chunk-major, ``[batch, heads, stride / OUT_W, rows, OUT_W]``: the banded
    convolution's ``[BLOCK_M, OUT_W]`` operand tiles are then contiguous 2 KB blocks, and a
    warp's 512-byte copy touches 4 cache lines instead of 16 (one per 32-byte row piece); the
    convolution took 11.0 instead of 13.4 us at L 1024 (benchmarks/KERNELS.md, run 14). For the
    im2col kernel, which gathers single elements, one chunk is the whole row (row-major).
    """

    def __init__(self, shape, dtype: torch.dtype, consts: dict, softmax: bool, zeroed: int = 0):
        batch, heads, seq, _ = shape
        k = consts["K"]
        pad = k // 2
        out_w = _subtile_width(k)
        im2col = _uses_im2col(consts, dtype)
        self.band_shape = _im2col_shape(consts) if im2col else _band_shape(consts)
        rows, stride = _padded_plane(seq, k)
        chunk = stride if im2col else out_w
        self.padded_shape = (batch, heads, stride // chunk, rows, chunk)
        band_rows = self.band_shape[0]
        units, align = _length(seq)

        def grid(meta):
            return (cdiv(rows, meta["BLOCK_R"]) + band_rows, batch * heads)

        self.launch = _launch_pad.bind(grid, (units, rows, stride, rows * stride), L_ALIGN=align, ZEROED=zeroed,
                                       PAD=pad, SOFTMAX=softmax, FLIP=not softmax,
                                       A_W=next_power_of_2(self.band_shape[1]), N=self.band_shape[2], OUT_W=out_w,
                                       CHUNK=chunk, IM2COL=im2col, **consts)

    def __call__(self, source: torch.Tensor, weight: torch.Tensor,
                 zeroed: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(padded, band)``; ``zeroed``, fp32 of the ``zeroed`` elements given at construction, comes back zero."""
        padded = torch.empty(self.padded_shape, device=source.device, dtype=source.dtype)
        band = torch.empty(self.band_shape, device=source.device, dtype=source.dtype)
        self.launch(source, padded, weight, band, band if zeroed is None else zeroed)
        return padded, band


class _Convolution:
    """The forward's second launch at one shape: ``out`` from padded P and the weights that :class:`_Padding` made,
    banded or for the im2col kernel, fp32 products as ``precision`` says (and the backward's dP from G_pad, without
    ``zero_tiles``)."""

    def __init__(self, out_shape, padded_shape, dtype: torch.dtype, consts: dict, precision: str, has_bias: bool,
                 zero_tiles: bool):
        batch, _, seq, _ = out_shape
        _, _, stride_chunks, rows, chunk = padded_shape
        units, align = _length(seq)
        scalars = (units, stride_chunks * chunk, rows * stride_chunks * chunk)
        if _uses_im2col(consts, dtype):
            def im2col_grid(meta):
                return cdiv(seq, meta["BLOCK_I"]) * cdiv(seq, meta["BLOCK_J"]), batch

            heads_in = consts["C_IN"]
            self.launch = _launch_conv_im2col.bind(
                im2col_grid, (seq, _padded_row(seq), *scalars[1:]), C_IN=heads_in, C_OUT=consts["C_OUT"],
                N=_im2col_shape(consts)[2], K=consts["K"], SHIFT=consts["COL_PAD"] - consts["K"] // 2,
                HAS_BIAS=has_bias, INPUT_PRECISION=precision, ZERO_TILES=zero_tiles,
                BY_TAP=_convolves_by_tap(heads_in))
            return
        _, a_w, n = _band_shape(consts)
        out_w = a_w // 2
        heads = _heads_per_program(consts["C_OUT"])
        row_units, row_align = _length(_padded_row(seq))

        def grid(meta):
            return cdiv(seq, meta["BLOCK_M"]) * cdiv(seq, 4 * out_w) * cdiv(consts["C_OUT"], heads), batch

        self.launch = _launch_conv_fwd.bind(
            grid, (*scalars, row_units), L_ALIGN=align, ROW_ALIGN=row_align, C_IN=consts["C_IN"],
            C_OUT=consts["C_OUT"], K=consts["K"], HAS_BIAS=has_bias, N=n, HEADS=heads, OUT_W=out_w,
            INPUT_PRECISION=precision if dtype == torch.float32 else "tf32",
            UPCAST=_INTERPRET and dtype != torch.float32, ZERO_TILES=zero_tiles)

    def __call__(self, probs: torch.Tensor, band: torch.Tensor, bias: Optional[torch.Tensor], out: torch.Tensor):
        self.launch(probs, band, band if bias is None else bias, out)


def _strips_weight_gradient(padded_shape, seq: int, consts: dict, has_bias: bool):
    """dW and dbias of 16-bit operands into ``acc`` from padded G and P (:func:`_mta_bwd_weight_strips_kernel`):
    the launch, called with ``(G_pad, P_pad, acc)``."""
    batch, heads_in, stride_chunks, rows, chunk = padded_shape
    blocks = _strip_blocks(consts["K"], heads_in, consts["C_OUT"])
    out_strips = cdiv(seq, blocks["BLOCK_J"]) * cdiv(consts["C_OUT"], blocks["HEADS_OUT"])
    strips = out_strips * consts["K"] * cdiv(heads_in, blocks["HEADS_IN"])
    units, align = _length(seq)
    return _launch_bwd_weight_strips.bind((strips + (out_strips if has_bias else 0), batch),
                                          (units, rows, rows * stride_chunks * chunk, strips), L_ALIGN=align,
                                          CHUNK=chunk, REPLICAS=_REPLICAS, UPCAST=_INTERPRET, **blocks, **consts)


def _im2col_weight_gradient(padded_shape, seq: int, consts: dict, has_bias: bool, precision: str):
    """dW and dbias of fp32 operands into ``acc`` from g and padded P (:func:`_mta_bwd_weight_im2col_kernel`): the
    launch, called with ``(g, P_pad, acc)``."""
    batch, heads_in, stride_chunks, rows, chunk = padded_shape
    block_i, block_j, widest, warps = _im2col_weight_blocks(chunk, stride_chunks == 1)
    taps = heads_in * consts["K"] ** 2
    block_t = _tap_block(taps, widest)
    units, align = _length(seq)
    return _launch_bwd_weight_im2col.bind((cdiv(seq, block_i) * cdiv(taps, block_t), batch),
                                          (units, stride_chunks * chunk, rows * stride_chunks * chunk),
                                          L_ALIGN=align, C_OUT_P=max(next_power_of_2(consts["C_OUT"]), 16), CHUNK=chunk,
                                          ROW_MAJOR=stride_chunks == 1, HAS_BIAS=has_bias, REPLICAS=_REPLICAS,
                                          INPUT_PRECISION=precision, BLOCK_I=block_i, BLOCK_J=block_j,
                                          BLOCK_T=block_t, num_warps=warps, **consts)


class _Plan:
    """Every launch of one call signature (shapes, dtypes, groups, precision, bias or not, device), worked out on its
    first call: a later call only allocates and launches (benchmarks/KERNELS.md, "Per-shape plans")."""

    def __init__(self, shape, dtype: torch.dtype, weight_shape, groups: int, precision: str, has_bias: bool):
        batch, heads_in, seq, _ = shape
        consts = _shape_constants(heads_in, weight_shape, groups)
        self.scores_shape, self.out_shape = tuple(shape), (batch, consts["C_OUT"], seq, seq)
        self.pad_probs = _Padding(shape, dtype, consts, softmax=True)
        self.convolve = _Convolution(self.out_shape, self.pad_probs.padded_shape, dtype, consts, precision, has_bias,
                                     zero_tiles=True)
        transposed = _transposed(consts)
        self.accumulators = _REPLICAS * (consts["C_OUT"] * consts["IN_PER_GROUP"] * consts["K"] ** 2 + consts["C_OUT"])
        self.pad_grads = _Padding(self.out_shape, dtype, transposed, softmax=False, zeroed=self.accumulators)
        self.convolve_grads = _Convolution(self.scores_shape, self.pad_grads.padded_shape, dtype, transposed,
                                           precision, has_bias=False, zero_tiles=False)
        self.weight_gradient_of_padded = dtype != torch.float32  # strips read G_pad; im2col reads g
        if self.weight_gradient_of_padded:
            self.weight_gradient = _strips_weight_gradient(self.pad_probs.padded_shape, seq, consts, has_bias)
        else:
            self.weight_gradient = _im2col_weight_gradient(self.pad_probs.padded_shape, seq, consts, has_bias,
                                                           precision)
        _, _, stride_chunks, rows, chunk = self.pad_probs.padded_shape

        def grid(meta):
            return cdiv(seq, meta["BLOCK_M"]), batch * heads_in

        units, align = _length(seq)
        row_units, row_align = _length(_padded_row(seq))
        self.scores_gradient = _launch_bwd_scores.bind(
            grid, (units, stride_chunks * chunk, rows * stride_chunks * chunk, row_units), L_ALIGN=align,
            ROW_ALIGN=row_align, C_IN=heads_in, C_OUT=consts["C_OUT"], IN_PER_GROUP=consts["IN_PER_GROUP"],
            K=consts["K"], COL_PAD=consts["COL_PAD"], CHUNK=chunk, HAS_BIAS=has_bias, REPLICAS=_REPLICAS)


def _checked_call(scores, weight, bias, groups: int, precision: str) -> None:
    """Refuse, with what to pass, a call the kernels cannot take (see :mod:`plugins._arguments`): tensors described
    as ``(shape, dtype, device)``."""
    check_precision(precision)
    check_tensors({"scores": scores, "weight": weight, "bias": bias})
    scores_shape, weight_shape = tuple(scores[0]), tuple(weight[0])
    if len(scores_shape) != 4 or scores_shape[2] != scores_shape[3] or not scores_shape[2]:
        raise ValueError(f"scores must be [batch, heads_in, seq, seq] with seq >= 1, got {scores_shape}")
    if (len(weight_shape) != 4 or weight_shape[2] != weight_shape[3] or weight_shape[2] % 2 == 0 or groups < 1
            or weight_shape[1] * groups != scores_shape[1] or weight_shape[0] % groups):
        raise ValueError(f"weight must be [heads_out, heads_in/groups, k, k] with k odd and heads_out a multiple of "
                         f"groups ({groups}), got {weight_shape} for {scores_shape[1]} input heads")
    check_shape("bias", bias, weight_shape[:1])
    # offsets within a padded plane are 32-bit, and the banded convolutions step from one head's plane to the next by
    # one too, forward over P's heads_in planes and backward over G's heads_out
    rows, stride = _padded_plane(scores_shape[2], weight_shape[2])
    check_offsets(f"a padded plane of P or G at seq {scores_shape[2]}, k {weight_shape[2]} ({rows} x {stride})",
                  rows * stride - 1)
    heads = max(scores_shape[1], weight_shape[0])
    check_offsets(f"the last of {heads} heads' padded planes of P or G ({rows} x {stride} each)",
                  (heads - 1) * rows * stride)


@functools.lru_cache(maxsize=64)
def _plan(scores, weight, bias, groups, precision, device) -> _Plan:
    """The plan of a call signature, its call checked first: ``scores``, ``weight`` and ``bias`` as ``(shape, dtype,
    device)`` (bias None when absent). Every part of the key is something a launch specializes on or a check reads."""
    _checked_call(scores, weight, bias, groups, precision)
    return _Plan(scores[0], scores[1], weight[0], groups, precision, bias is not None)


def _plan_of(scores, weight, bias, groups: int, precision: str) -> _Plan:
    """The plan of a call on these tensors (contiguous and aligned, see :func:`aligned`)."""
    return _plan(described(scores, "scores"), described(weight, "weight"), described(bias, "bias"),
                 whole_number("groups", groups), precision, launch_device())


class _MultiTokenAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores, weight, bias, plan):
        scores, weight, bias = aligned(scores), aligned(weight), None if bias is None else aligned(bias)
        probs, band = plan.pad_probs(scores, weight)
        out = _padded_rows(plan.out_shape, scores.dtype, scores.device)
        plan.convolve(probs, band, bias, out)
        ctx.save_for_backward(probs, weight, bias)
        ctx.plan = plan
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        probs, weight, bias = ctx.saved_tensors
        plan = ctx.plan
        grad_out = aligned(grad_out)
        acc = torch.empty(plan.accumulators, device=probs.device, dtype=torch.float32)
        grads, band = plan.pad_grads(grad_out, weight, acc)
        dprobs = _padded_rows(plan.scores_shape, torch.float32, probs.device)
        plan.convolve_grads(grads, band, None, dprobs)
        plan.weight_gradient(grads if plan.weight_gradient_of_padded else grad_out, probs, acc)
        dscores = torch.empty(plan.scores_shape, device=probs.device, dtype=probs.dtype)
        dweight = torch.empty_like(weight)
        dbias = None if bias is None else torch.empty_like(bias)
        plan.scores_gradient(probs, dprobs, acc, dscores, dweight, dweight if dbias is None else dbias)
        return dscores, dweight, dbias, None


_apply_multi_token_attention = lean_apply(_MultiTokenAttention)


def multi_token_attention_triton(scores: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], *,
                                 groups: int = 1, precision: str = FP32_DOT_PRECISION) -> torch.Tensor:
    """Same contract as ``reference.multi_token_attention_torch``; differentiable (once: a second derivative raises).

    P is rounded to the scores' dtype between the softmax and the convolution, as the
    torch formulation does; sums are fp32 inside the kernels; outputs in the scores' dtype.
    The forward convolution multiplies fp32 as ``precision`` says (``tl.dot``'s ``input_precision``: TF32
    by default, ``PRECISE_FP32_DOT_PRECISION`` for fp32-grade results); the backward's products are fp32 FMAs.
    At a length that is no multiple of 8 the output is not contiguous: a view of rows padded to the next multiple
    of 8 (``out.stride(2)``, :func:`_padded_row`), whose 16-byte-aligned rows the convolution stores whole, as
    flash-attn pads a head dimension; ``out.contiguous()`` copies it.
    A call the kernels cannot take raises TypeError or ValueError (checked once a call signature, in its plan).
    """
    plan = _plan_of(scores, weight, bias, groups, precision)
    if not scores.shape[0]:  # no program to launch: torch's empty result, and zero weight gradients
        return multi_token_attention_torch(scores, weight, bias, groups=groups)
    return _apply_multi_token_attention(scores, weight, bias, plan)


# ----------------------------------------------------------------------------- records

_AUTOTUNED = {
    "_mta_pad_kernel": _mta_pad_kernel,
    "_mta_conv_fwd_kernel": _mta_conv_fwd_kernel,
    "_mta_conv_im2col_kernel": _mta_conv_im2col_kernel,
    "_mta_bwd_scores_kernel": _mta_bwd_scores_kernel,
}


def tuned_configs() -> dict[str, list[dict]]:
    """Every autotuned choice made so far in this process (see :func:`plugins._triton_launcher.tuned_configs`);
    the backward's weight kernels are not autotuned (they accumulate atomically) and report their fixed blocks."""
    record = autotuned_choices(_AUTOTUNED)
    record["_mta_bwd_weight_strips_kernel"] = [
        {"key": ["16-bit", f"heads_out >= {fewest}"],
         "config": {"BLOCK_I": block_i, "BLOCK_J": block_j, "ALIGN": align, "num_warps": warps}}
        for fewest, (block_i, block_j, align, warps) in _STRIP_TILES]
    block_i, block_j, widest, warps = _IM2COL_WEIGHT_BLOCKS
    record["_mta_bwd_weight_im2col_kernel"] = [
        {"key": ["32-bit"], "config": {"BLOCK_I": block_i, "BLOCK_J": block_j, "BLOCK_T": f"min(taps, {widest})",
                                       "num_warps": warps}}]
    return record


def implementation_record(precision: str = FP32_DOT_PRECISION) -> dict:
    """What a run records about this implementation at ``precision``: versions, precision and tuned configs."""
    return {"module": __name__, "triton": triton.__version__,
            "compute_precision": "P rounded to the input dtype (as torch); fp32 sums; I/O in the input dtype",
            "output_layout": "rows padded to a multiple of 8 elements where seq is not one (a strided view)",
            "fp32_dot_precision": precision, "tf32": precision == "tf32",
            "autotuned": tuned_configs()}
