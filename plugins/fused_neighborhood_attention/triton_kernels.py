"""Fused neighborhood attention in Triton: KernelIndex's own kernels (``kernelindex_triton``).

Computes exactly :func:`plugins.fused_neighborhood_attention.reference.fused_neighborhood_attention_torch`
(same signature), forward and backward:

forward, three launches::

    qkv  = x [M, H] @ [Wq; Wk; Wv]^T + [bq; bk; bv]          _linear_matmul_kernel  (3 splits, one launch)
    attn = neighborhood attention of qkv, lse per row/head    _neighborhood_attention_fwd_kernel
    out  = attn @ Wo^T + bo                                   _linear_matmul_kernel

backward (``dout`` given), nine launches and two zero fills (the bias sums)::

    dout^T, attn^T, x^T (stacked), dbo = dout's column sums             _transpose_kernel
    Wo^T | Wq^T | Wk^T | Wv^T (side by side)                            _transpose_kernel
    dattn = dout @ Wo;  dWo = dout^T @ attn                              _linear_matmul_kernel x2
    delta = rowsum(P * dP) per row/head, from dattn, qkv and lse         _neighborhood_attention_delta_kernel
    dq, dk, dv from dattn, qkv, lse and delta (no atomics: each          _neighborhood_attention_bwd_kernel
        key gathers from the queries that see it, the relation being symmetric)
    dx = dqkv @ [Wq; Wk; Wv]                                             _linear_matmul_kernel
    dqkv^T, db = its column sums (the key bias's: exactly 0)             _transpose_kernel
    d[Wq; Wk; Wv] = dqkv^T @ x                                           _linear_matmul_kernel

where ``M = batch * seq`` and ``H = hidden``. Every product reads its operands K-contiguous, hence the
transposed copies: the weight gradients multiply over the token axis (see :class:`_Product`). Measured on
the H200 (benchmarks/KERNELS.md, "The FNA backward's products" and "The FNA backward in eight launches"):
92.9 us of kernels at the reference with five transpose launches and a concatenation (products 46.7,
transposes 19.6, attention 17.3, concatenation 7.6), 203.8 before the copies; 103.2 -> 98.4 us in the
rerun harness with the transposes in three launches.

Work and traffic (fp32, batch 2, seq 1024, hidden 512, heads 8, kernel 7; M = 2048):

* FLOPs: four projections ``4 * 2 * M * H^2 = 4.3 GFLOP``; the neighborhood part
  ``4 * M * H * kernel = 29 MFLOP`` (negligible). The projections run on the tensor cores
  through ``tl.dot``; for fp32 inputs that is **TF32** (``FP32_DOT_PRECISION``, recorded by
  :func:`implementation_record`): 4.3 GFLOP / 341 TFLOP/s = 13 us floor. ``"tf32x3"``
  (three TF32 products per fp32 product) gives fp32 accuracy (2.7e-7) for about +25% forward time;
  the plugin offers it as a second implementation (``precision`` below).
* Bytes: x and out 4 MB each, weights 4 MB: 12.6 MB, 3 us at 4.27 TB/s; the unfused
  intermediates (qkv 12.6 MB written and read, attn 4.2 MB written and read) add 34 MB,
  about 8 us, which the GEMM time mostly hides. Each K/V row is read ``kernel`` times by the
  attention kernel, from L2.
* Operand traffic from L2 bounds the GEMMs, not the tensor cores: a ``BM x BN`` tile
  streams ``4 * H * (BM + BN)`` bytes. The QKV GEMM computes each tile of all three splits
  in one program (128 x 3*64: 128 programs, one per SM, 640 KB each) instead of a program
  per split (192 programs of 128 x 128, two on some SMs: 1 MB there). Large GEMMs (hidden 2048) are
  bound by the tensor cores instead, and there a program per split with a 128 x 256 tile is the
  better choice; the autotuner makes it per shape (``SPLITS_TOGETHER``).
* Measured on the H200 (benchmarks/KERNELS.md run 10): 36.5 us per call in the rerun
  protocol (L2 flushed, host launch cost hidden), 29.1 us by CUDA-graph replay with a warm
  L2 (run 9, by stage: QKV GEMM 15.9, attention 7.1, output GEMM 7.4 us; cuBLAS TF32 takes
  15.7 and 7.9 us for the two GEMMs): 2.9x the TF32 floor. Each launch is bound once a call
  signature (:class:`_Plan`, :class:`plugins._triton_launcher.BoundLaunch`), so that after the
  first call at a shape no autotuner, argument binding or shape arithmetic runs on the way to the
  compiled kernel, and is a programmatic dependent launch (2 us less between the three kernels).

Autotuned configurations are kept per shape by Triton's autotuner, which times candidates by
CUDA-graph replay (:func:`plugins._triton_launcher.device_time`); :func:`tuned_configs` returns
those chosen so far (for the run's implementation document).
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
                                      lean_apply, next_power_of_2)
from plugins._triton_launcher import tuned_configs as autotuned_choices

FP32_DOT_PRECISION = "tf32"
"""How the projections' ``tl.dot`` multiplies fp32 operands by default: TF32 tensor cores (10-bit mantissa, fp32
accumulate)."""

PRECISE_FP32_DOT_PRECISION = "tf32x3"
"""The precise choice: each fp32 operand split into a TF32 head and tail, three TF32 products, fp32-grade results."""


_INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


# ----------------------------------------------------------------------------- GEMM


def _matmul_configs():
    """Tiles for programs that compute every split's tile (``SPLITS_TOGETHER``), and for one split a program,
    where the large tiles of large GEMMs fit (a 128 x 256 fp32 accumulator: 128 registers a thread at 8 warps)."""
    if _INTERPRET:  # the interpreter runs every config: keep one (the tests swap in the other kind)
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_M": 4, "SPLITS_TOGETHER": True},
                              num_warps=4, num_stages=1)]
    shapes = [  # BLOCK_M, BLOCK_N, BLOCK_K, warps, stages
        (128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4),
        (128, 128, 64, 8, 2), (64, 64, 64, 4, 3), (32, 64, 64, 4, 4),
        (128, 64, 32, 8, 3), (128, 64, 32, 8, 4), (128, 64, 64, 8, 2), (64, 128, 64, 4, 3), (128, 64, 64, 4, 3),
        (128, 256, 32, 8, 4), (256, 128, 32, 8, 4), (128, 256, 64, 8, 3), (128, 128, 32, 8, 5),
        (128, 128, 64, 8, 3), (256, 128, 64, 8, 3),  # 16-bit operands (benchmarks/KERNELS.md, "16-bit GEMMs")
    ]
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8, "SPLITS_TOGETHER": together},
                          num_warps=w, num_stages=s)
            for m, n, k, w, s in shapes for together in (True, False)]


_SHARED_MEMORY_BYTES = 227 * 1024
"""The most shared memory a program may have on Hopper: a config that needs more compiles, then fails to load."""


def _fitting_configs(configs, named_args, **kwargs):
    """The configs worth compiling (the autotuner's pruning hook): accumulators that stay in registers, at most 128
    fp32 values a thread for a program of one split, 96 for a program of three (which also keeps their operands),
    and, with 32-bit operands, operand stages that fit shared memory. With one split, the configs that differ only
    in ``SPLITS_TOGETHER`` are the same: one of each is kept.

    The stages need ``(BLOCK_M + BLOCK_N * splits in the program) * BLOCK_K * 4 * num_stages`` bytes in fp32: so
    Triton's compiled kernels for sm_90 said of all 72 fp32 configs (benchmarks/KERNELS.md). Two that the register
    rule keeps do not fit, at one split or three, and compiling each cost seconds of a cold host's budget before it
    failed to load. In 16 bits Triton needed less than that product for some configs: the rule is not applied there."""
    splits = kwargs.get("NUM_SPLITS", named_args.get("NUM_SPLITS", 1))
    operand = named_args.get("a_ptr")
    word_operands = operand is not None and operand.element_size() == 4

    def fits(config):
        m, n, k = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"], config.kwargs["BLOCK_K"]
        together = config.kwargs["SPLITS_TOGETHER"]
        if splits == 1 and not together:
            return False
        in_program = splits if together else 1
        if word_operands and (m + n * in_program) * k * 4 * config.num_stages > _SHARED_MEMORY_BYTES:
            return False
        return m * n * in_program / (32 * config.num_warps) <= (128 if in_program == 1 else 96)

    return [config for config in configs if fits(config)]


@triton.jit
def _bias_and_store(acc, bias_ptr, c_ptr, rows, cols, col_offset, M, N, stride_cm, stride_cn,
                    HAS_BIAS: tl.constexpr):
    """``c[rows, col_offset + cols] = acc (+ bias[cols])``, in c's dtype, inside ``M x N``."""
    if HAS_BIAS:
        acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    c_ptrs = c_ptr + rows[:, None] * stride_cm + (col_offset + cols)[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.autotune(configs=_matmul_configs(), key=["M", "N", "K", "NUM_SPLITS", "INPUT_PRECISION"], do_bench=device_time,
                 prune_configs_by={"early_config_prune": _fitting_configs})
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def _linear_matmul_kernel(a_ptr, b0_ptr, b1_ptr, b2_ptr, bias0_ptr, bias1_ptr, bias2_ptr, c_ptr,
                          M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          NUM_SPLITS: tl.constexpr, HAS_BIAS: tl.constexpr,
                          INPUT_PRECISION: tl.constexpr, UPCAST: tl.constexpr, BLOCK_M: tl.constexpr,
                          BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                          SPLITS_TOGETHER: tl.constexpr, EVEN_K: tl.constexpr):
    """``c[:, s*N:(s+1)*N] = a @ b_s + bias_s`` for each split ``s < NUM_SPLITS`` (1 or 3).

    ``a [M, K]`` and each ``b_s [K, N]`` are read through their strides (a transposed weight
    is just swapped strides). With ``SPLITS_TOGETHER`` a program computes its ``BLOCK_M x BLOCK_N``
    tile of every split, so the ``a`` tile it streams serves all of them: at the reference the QKV
    projection is bound by operand traffic from L2, and reads x once per 192 output columns instead of
    once per 64 or 128. Otherwise a program computes one split's tile, which leaves the registers for
    the large tiles that large GEMMs need (the autotuner chooses).
    Grid: ``(cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N) * programs per tile,)``, tiles ordered in groups of
    ``GROUP_M`` rows of tiles so that neighbours share B in L2; a tile's split programs are neighbours.
    """
    follow_previous_launch()
    pid = tl.program_id(0)
    if SPLITS_TOGETHER:
        split = 0
    else:  # one split a program (with one split, the same as together)
        split = pid % NUM_SPLITS
        pid = pid // NUM_SPLITS
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    tiles_per_group = GROUP_M * num_n
    first_m = (pid // tiles_per_group) * GROUP_M
    group_rows = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % tiles_per_group) % group_rows
    pid_n = (pid % tiles_per_group) // group_rows

    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    rows_in = rows % M  # wrapped: out-of-range rows/cols compute garbage that is never stored
    cols_in = cols % N
    a_ptrs = a_ptr + rows_in[:, None] * stride_am + ks[None, :] * stride_ak
    b_offsets = ks[:, None] * stride_bk + cols_in[None, :] * stride_bn
    b_ptr = b0_ptr  # the first split's, or this program's split's
    bias_ptr = bias0_ptr
    if not SPLITS_TOGETHER:
        if split == 1:
            b_ptr = b1_ptr
            bias_ptr = bias1_ptr
        elif split == 2:
            b_ptr = b2_ptr
            bias_ptr = bias2_ptr

    acc0 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b0 = tl.load(b_ptr + b_offsets)
        else:
            a = tl.load(a_ptrs, mask=ks[None, :] < K - k0, other=0.0)
            b0 = tl.load(b_ptr + b_offsets, mask=ks[:, None] < K - k0, other=0.0)
        if UPCAST:  # the interpreter's 16-bit dot is wrong (Triton 3.9): multiply in fp32 there
            a = a.to(tl.float32)
        acc0 = tl.dot(a, b0.to(a.dtype), acc=acc0, input_precision=INPUT_PRECISION)
        if SPLITS_TOGETHER and NUM_SPLITS > 1:
            if EVEN_K:
                b1 = tl.load(b1_ptr + b_offsets)
                b2 = tl.load(b2_ptr + b_offsets)
            else:
                b1 = tl.load(b1_ptr + b_offsets, mask=ks[:, None] < K - k0, other=0.0)
                b2 = tl.load(b2_ptr + b_offsets, mask=ks[:, None] < K - k0, other=0.0)
            acc1 = tl.dot(a, b1.to(a.dtype), acc=acc1, input_precision=INPUT_PRECISION)
            acc2 = tl.dot(a, b2.to(a.dtype), acc=acc2, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_offsets += BLOCK_K * stride_bk

    _bias_and_store(acc0, bias_ptr, c_ptr, rows, cols, split * N, M, N, stride_cm, stride_cn, HAS_BIAS)
    if SPLITS_TOGETHER and NUM_SPLITS > 1:
        _bias_and_store(acc1, bias1_ptr, c_ptr, rows, cols, N, M, N, stride_cm, stride_cn, HAS_BIAS)
        _bias_and_store(acc2, bias2_ptr, c_ptr, rows, cols, 2 * N, M, N, stride_cm, stride_cn, HAS_BIAS)


_launch_matmul = Launcher(_linear_matmul_kernel)


class _Product:
    """The launch of ``_linear_matmul_kernel`` at one shape: ``out[:, s*N:(s+1)*N] = a @ b_s (+ bias_s)`` for 1 or 3
    splits ``b_s [K, N]``, into a row-major ``out [M, splits * N]``; fp32 operands multiplied as ``precision`` says.

    Every operand is K-contiguous: ``a`` row-major ``[M, K]``, each ``b_s`` a transposed row-major tensor (its
    ``[k, n]`` element at ``n * b_row + k``; ``b_row = K`` for a whole ``[N, K]`` weight). Hopper's tensor-core
    product reads 32-bit operands from shared memory only that way, and Triton multiplied the backward's
    transposed views 2.4x slower than cuBLAS in fp32 and 2.5x in fp16 (benchmarks/KERNELS.md).
    """

    def __init__(self, M: int, N: int, K: int, dtype: torch.dtype, precision: str, splits: int = 1,
                 has_bias: bool = False, b_row: Optional[int] = None):
        def grid(meta):
            programs_per_tile = 1 if meta["SPLITS_TOGETHER"] else splits
            return (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]) * programs_per_tile,)

        self.has_bias = has_bias
        self.launch = _launch_matmul.bind(grid, (M, N, K, K, 1, 1, K if b_row is None else b_row, splits * N, 1),
                                          NUM_SPLITS=splits, HAS_BIAS=has_bias, INPUT_PRECISION=precision,
                                          UPCAST=_INTERPRET and dtype != torch.float32)

    def __call__(self, a: torch.Tensor, bs, out: torch.Tensor, biases=()) -> torch.Tensor:
        """``bs``: the ``b_s`` as the tensors whose storage they start (a weight for its transpose)."""
        unused = 3 - len(bs)
        self.launch(a, *bs, *(bs[0],) * unused, *(biases if self.has_bias else (out,) * len(bs)), *(out,) * unused,
                    out)
        return out


_TRANSPOSE_BLOCK = 64


@triton.jit
def _transpose_kernel(x0_ptr, x1_ptr, x2_ptr, x3_ptr, out_ptr, sums_ptr, M, N, stride_xm, stride_om, out_step,
                      unsummed_from, unsummed_to, COLUMN_SUMS: tl.constexpr, BLOCK: tl.constexpr):
    """``out[i * out_step + n * stride_om + m] = x_i[m, n]`` for the matrix ``i = program_id(2)`` of up to four
    row-major ``[M, N]`` matrices of one shape and row stride (unused pointers repeat the first).

    With ``COLUMN_SUMS``, also ``sums[n] += sum_m x_0[m, n]`` (fp32, zeroed by the caller; each row block adds its
    part) for the columns outside ``[unsummed_from, unsummed_to)``. Grid: ``(cdiv(M, BLOCK), cdiv(N, BLOCK), i)``.
    """
    follow_previous_launch()
    which = tl.program_id(2)
    x_ptr = x0_ptr
    if which == 1:
        x_ptr = x1_ptr
    elif which == 2:
        x_ptr = x2_ptr
    elif which == 3:
        x_ptr = x3_ptr
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    inside = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=inside, other=0.0)
    tl.store(out_ptr + which * out_step + cols[:, None] * stride_om + rows[None, :], tl.trans(tile),
             mask=tl.trans(inside))
    if COLUMN_SUMS:
        if which == 0:
            summed = (cols < N) & ((cols < unsummed_from) | (cols >= unsummed_to))
            tl.atomic_add(sums_ptr + cols, tl.sum(tile.to(tl.float32), axis=0), mask=summed, sem="relaxed")


_launch_transpose = Launcher(_transpose_kernel)


class _Transposes:
    """The launch of ``_transpose_kernel`` at one shape: the transposes of ``count`` (up to four) contiguous
    ``[M, N]`` matrices of ``dtype``, into one row-major buffer: stacked (``[count * N, M]``, ``x_i^T`` in rows
    ``i * N`` on) or side by side (``[N, count * M]``, in columns ``i * M`` on). With ``column_sums``, also the first
    matrix's column sums (fp32; 0 for the columns in ``unsummed``).

    The backward's weight gradients multiply over the token axis, so their operands are transposed
    activations, and a bias gradient is the column sum of the same tensor, taken as it passes.
    """

    def __init__(self, count: int, M: int, N: int, dtype: torch.dtype, *, side_by_side: bool = False,
                 column_sums: bool = False, unsummed: range = range(0)):
        assert 1 <= count <= 4, "one to four matrices"
        self.count, self.column_sums, self.dtype, self.columns = count, column_sums, dtype, N
        self.shape = (N, count * M) if side_by_side else (count * N, M)
        grid = (cdiv(M, _TRANSPOSE_BLOCK), cdiv(N, _TRANSPOSE_BLOCK), count)
        self.launch = _launch_transpose.bind(grid, (M, N, N, self.shape[1], M if side_by_side else N * M,
                                                    unsummed.start, unsummed.stop),
                                             COLUMN_SUMS=column_sums, BLOCK=_TRANSPOSE_BLOCK)

    def __call__(self, matrices) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """``(buffer, sums)`` for the row-major ``matrices``, with ``sums`` None without ``column_sums``."""
        device = matrices[0].device
        out = torch.empty(self.shape, device=device, dtype=self.dtype)
        sums = torch.zeros(self.columns, device=device, dtype=torch.float32) if self.column_sums else None
        self.launch(*matrices, *(matrices[0],) * (4 - self.count), out, out if sums is None else sums)
        return out, sums


@triton.jit
def _head_tile(L, HEADS, HEAD_DIM, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """This program's tile of the attention kernels' grid ``(cdiv(L, BLOCK_M), batch * HEADS)``: its batch and
    head, the tile's positions (and which lie in ``[0, L)``), which of ``BLOCK_D`` columns lie in the head, the
    positions' token rows and the head's columns."""
    pid_bh = tl.program_id(1)
    batch = pid_bh // HEADS
    head = pid_bh % HEADS
    pos = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, BLOCK_D)
    return batch, head, pos, pos < L, dims < HEAD_DIM, batch * L + pos, head * HEAD_DIM + dims


@triton.jit
def _neighbor_keys_values(qkv_ptr, batch, nbr, ok, col, dim_ok, L, HIDDEN, stride_qkv):
    """The k and v rows (fp32) of neighbour positions ``nbr`` of one head, zero where ``ok`` is false."""
    offsets = (batch * L + nbr)[:, None] * stride_qkv + col[None, :]
    mask = ok[:, None] & dim_ok[None, :]
    k = tl.load(qkv_ptr + HIDDEN + offsets, mask=mask, other=0.0).to(tl.float32)
    v = tl.load(qkv_ptr + 2 * HIDDEN + offsets, mask=mask, other=0.0).to(tl.float32)
    return k, v


def _attention_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": m}, num_warps=w)
            for m, w in [(16, 4), (16, 8), (32, 8), (32, 16), (64, 4), (64, 8), (128, 8)]]


@triton.autotune(configs=_attention_configs(), key=["L", "HEAD_DIM", "KERNEL", "DILATION"], do_bench=device_time)
@triton.jit
def _neighborhood_attention_fwd_kernel(qkv_ptr, o_ptr, lse_ptr, L, HIDDEN, HEADS, HEAD_DIM, qk_scale_log2,
                                       stride_qkv, stride_o,
                                       KERNEL: tl.constexpr, DILATION: tl.constexpr,
                                       BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """One tile of ``BLOCK_M`` query positions of one (batch, head): online softmax over the
    ``KERNEL`` neighbours ``i + (t - KERNEL//2) * DILATION`` that lie in ``[0, L)``.

    ``qkv`` rows are ``[q | k | v]`` (``3 * HIDDEN``); writes ``o`` (the head's ``HEAD_DIM``
    columns) and ``lse`` (base-2 log-sum-exp of the scaled scores, for the backward).
    Grid: ``(cdiv(L, BLOCK_M), batch * HEADS)``.
    """
    follow_previous_launch()
    batch, head, pos, pos_ok, dim_ok, rows, col = _head_tile(L, HEADS, HEAD_DIM, BLOCK_M, BLOCK_D)

    q = tl.load(qkv_ptr + rows[:, None] * stride_qkv + col[None, :],
                mask=pos_ok[:, None] & dim_ok[None, :], other=0.0).to(tl.float32)
    m = tl.full((BLOCK_M,), -1.0e30, dtype=tl.float32)
    denom = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for t in tl.static_range(KERNEL):  # unrolled: the 2*KERNEL row loads are issued together
        nbr = pos + (t - KERNEL // 2) * DILATION
        ok = pos_ok & (nbr >= 0) & (nbr < L)
        k, v = _neighbor_keys_values(qkv_ptr, batch, nbr, ok, col, dim_ok, L, HIDDEN, stride_qkv)
        s = tl.where(ok, tl.sum(q * k, axis=1) * qk_scale_log2, float("-inf"))
        m_new = tl.maximum(m, s)
        alpha = tl.exp2(m - m_new)
        p = tl.exp2(s - m_new)
        denom = denom * alpha + p
        acc = acc * alpha[:, None] + p[:, None] * v
        m = m_new
    out = acc / tl.where(pos_ok, denom, 1.0)[:, None]
    tl.store(o_ptr + rows[:, None] * stride_o + col[None, :], out.to(o_ptr.dtype.element_ty),
             mask=pos_ok[:, None] & dim_ok[None, :])
    tl.store(lse_ptr + rows * HEADS + head, m + tl.log2(tl.where(pos_ok, denom, 1.0)), mask=pos_ok)


def _bwd_configs():
    if _INTERPRET:
        return [triton.Config({"BLOCK_M": 16}, num_warps=4)]
    return [triton.Config({"BLOCK_M": m}, num_warps=w) for m, w in [(16, 8), (32, 16), (16, 4), (32, 8), (64, 16)]]


@triton.autotune(configs=_attention_configs(), key=["L", "HEAD_DIM", "KERNEL", "DILATION"], do_bench=device_time)
@triton.jit
def _neighborhood_attention_delta_kernel(qkv_ptr, do_ptr, lse_ptr, delta_ptr, L, HIDDEN, HEADS, HEAD_DIM,
                                         qk_scale_log2, stride_qkv, stride_do,
                                         KERNEL: tl.constexpr, DILATION: tl.constexpr,
                                         BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """The softmax backward's ``delta_i = sum_j p_ij (do_i . v_j)`` in fp32 for a tile of query positions of one
    (batch, head), stored beside ``lse``.

    It equals ``do_i . o_i``, but ``o`` as stored is rounded to the workload's dtype: in 16 bits, where the
    attention saturates and every ``dp_ij - delta_i`` is near zero, that rounding was most of the q and k
    gradients (benchmarks/KERNELS.md, "The FNA backward in 16 bits"). Summed from the window, and divided by
    the sum of the recomputed ``p``, ``delta`` is consistent with the ``p`` and ``dp`` the backward recomputes. Grid: ``(cdiv(L, BLOCK_M), batch * HEADS)``.
    """
    follow_previous_launch()
    batch, head, pos, pos_ok, dim_ok, rows, col = _head_tile(L, HEADS, HEAD_DIM, BLOCK_M, BLOCK_D)

    tile_ok = pos_ok[:, None] & dim_ok[None, :]
    q = tl.load(qkv_ptr + rows[:, None] * stride_qkv + col[None, :], mask=tile_ok, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + rows[:, None] * stride_do + col[None, :], mask=tile_ok, other=0.0).to(tl.float32)
    lse = tl.load(lse_ptr + rows * HEADS + head, mask=pos_ok, other=0.0)
    delta = tl.zeros((BLOCK_M,), dtype=tl.float32)
    p_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for t in tl.static_range(KERNEL):
        nbr = pos + (t - KERNEL // 2) * DILATION
        ok = pos_ok & (nbr >= 0) & (nbr < L)
        k, v = _neighbor_keys_values(qkv_ptr, batch, nbr, ok, col, dim_ok, L, HIDDEN, stride_qkv)
        p = tl.where(ok, tl.exp2(tl.sum(q * k, axis=1) * qk_scale_log2 - lse), 0.0)
        delta += p * tl.sum(do * v, axis=1)
        p_sum += p
    # Recomputed from lse, the p of large scores sum to 1 + eps (lse's last bits); normalized, the ds of a row
    # sum to exactly 0, as the softmax's do, and eps * delta no longer lands in every near-zero ds.
    tl.store(delta_ptr + rows * HEADS + head, delta / tl.where(pos_ok, p_sum, 1.0), mask=pos_ok)


@triton.autotune(configs=_bwd_configs(), key=["L", "HEAD_DIM", "KERNEL", "DILATION"], do_bench=device_time)
@triton.jit
def _neighborhood_attention_bwd_kernel(qkv_ptr, do_ptr, lse_ptr, delta_ptr, dqkv_ptr, L, HIDDEN, HEADS, HEAD_DIM,
                                       qk_scale_log2, scale, stride_qkv, stride_do, stride_dqkv,
                                       KERNEL: tl.constexpr, DILATION: tl.constexpr,
                                       BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    """Gradients of q, k and v for a tile of positions of one (batch, head), without atomics.

    As a query, position i gathers ``dq_i = scale * sum_t ds_{i,j} k_j`` over its
    neighbours j. As a key, it gathers ``dk_i = scale * sum ds_{n,i} q_n`` and
    ``dv_i = sum p_{n,i} do_n`` over the queries n that see it, which are its own
    neighbours (the relation is symmetric): ``n = i - offset_t``. Probabilities are
    recomputed from the forward's ``lse``; ``ds = p * (dp - delta)``, ``delta`` from
    :func:`_neighborhood_attention_delta_kernel`. Grid: ``(cdiv(L, BLOCK_M), batch * HEADS)``.
    """
    follow_previous_launch()
    batch, head, pos, pos_ok, dim_ok, rows, col = _head_tile(L, HEADS, HEAD_DIM, BLOCK_M, BLOCK_D)
    tile_ok = pos_ok[:, None] & dim_ok[None, :]

    own = qkv_ptr + rows[:, None] * stride_qkv + col[None, :]
    q_i = tl.load(own, mask=tile_ok, other=0.0).to(tl.float32)
    k_i = tl.load(own + HIDDEN, mask=tile_ok, other=0.0).to(tl.float32)
    v_i = tl.load(own + 2 * HIDDEN, mask=tile_ok, other=0.0).to(tl.float32)
    do_i = tl.load(do_ptr + rows[:, None] * stride_do + col[None, :], mask=tile_ok, other=0.0).to(tl.float32)
    lse_i = tl.load(lse_ptr + rows * HEADS + head, mask=pos_ok, other=0.0)
    delta_i = tl.load(delta_ptr + rows * HEADS + head, mask=pos_ok, other=0.0)

    dq = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    dk = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    dv = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for t in range(KERNEL):  # run-time loop: one neighbour's rows live at a time
        offset = (t - KERNEL // 2) * DILATION
        # i as a query: key j = i + offset
        key = pos + offset
        key_ok = pos_ok & (key >= 0) & (key < L)
        k_j, v_j = _neighbor_keys_values(qkv_ptr, batch, key, key_ok, col, dim_ok, L, HIDDEN, stride_qkv)
        p = tl.where(key_ok, tl.exp2(tl.sum(q_i * k_j, axis=1) * qk_scale_log2 - lse_i), 0.0)
        ds = p * (tl.sum(do_i * v_j, axis=1) - delta_i)
        dq += ds[:, None] * k_j
        # i as a key: query n = i - offset (whose neighbour n + offset is i)
        qry = pos - offset
        qry_ok = pos_ok & (qry >= 0) & (qry < L)
        qry_mask = qry_ok[:, None] & dim_ok[None, :]
        qry_rows = batch * L + qry
        q_n = tl.load(qkv_ptr + qry_rows[:, None] * stride_qkv + col[None, :], mask=qry_mask, other=0.0).to(tl.float32)
        do_n = tl.load(do_ptr + qry_rows[:, None] * stride_do + col[None, :], mask=qry_mask, other=0.0).to(tl.float32)
        lse_n = tl.load(lse_ptr + qry_rows * HEADS + head, mask=qry_ok, other=0.0)
        delta_n = tl.load(delta_ptr + qry_rows * HEADS + head, mask=qry_ok, other=0.0)
        p_n = tl.where(qry_ok, tl.exp2(tl.sum(q_n * k_i, axis=1) * qk_scale_log2 - lse_n), 0.0)
        ds_n = p_n * (tl.sum(do_n * v_i, axis=1) - delta_n)
        dk += ds_n[:, None] * q_n
        dv += p_n[:, None] * do_n

    out = dqkv_ptr + rows[:, None] * stride_dqkv + col[None, :]
    ty = dqkv_ptr.dtype.element_ty
    tl.store(out, (dq * scale).to(ty), mask=tile_ok)
    tl.store(out + HIDDEN, (dk * scale).to(ty), mask=tile_ok)
    tl.store(out + 2 * HIDDEN, dv.to(ty), mask=tile_ok)


# ----------------------------------------------------------------------------- launchers

_LOG2E = 1.4426950408889634
_launch_attention_fwd = Launcher(_neighborhood_attention_fwd_kernel)

_launch_attention_delta = Launcher(_neighborhood_attention_delta_kernel)
_launch_attention_bwd = Launcher(_neighborhood_attention_bwd_kernel)


class _Plan:
    """Every launch of one call signature (shapes, dtypes, biases, heads, kernel size, dilation, scale, precision,
    device), worked out on its first call: a later call only allocates and launches (benchmarks/KERNELS.md,
    "Per-shape plans")."""

    def __init__(self, shape, dtype: torch.dtype, has_bias: tuple[bool, bool, bool, bool], heads: int,
                 kernel_size: int, dilation: int, scale: float, precision: str):
        batch, seq, hidden = shape
        tokens, head_dim = batch * seq, hidden // heads
        self.shape, self.has_bias = tuple(shape), has_bias
        self.tokens, self.hidden, self.heads = tokens, hidden, heads

        def attention_grid(meta):
            return cdiv(seq, meta["BLOCK_M"]), batch * heads

        attention = dict(KERNEL=kernel_size, DILATION=dilation, BLOCK_D=next_power_of_2(head_dim))
        self.qkv_projection = _Product(tokens, hidden, hidden, dtype, precision, splits=3, has_bias=has_bias[0])
        self.attention = _launch_attention_fwd.bind(
            attention_grid, (seq, hidden, heads, head_dim, scale * _LOG2E, 3 * hidden, hidden), **attention)
        self.out_projection = _Product(tokens, hidden, hidden, dtype, precision, has_bias=has_bias[3])

        # the backward: dout^T, attn^T, x^T stacked; Wo^T | Wq^T | Wk^T | Wv^T side by side (see backward)
        self.transpose_activations = _Transposes(3, tokens, hidden, dtype, column_sums=has_bias[3])
        self.transpose_weights = _Transposes(4, hidden, hidden, dtype, side_by_side=True)
        self.d_attn = _Product(tokens, hidden, hidden, dtype, precision, b_row=4 * hidden)
        self.d_out_weight = _Product(hidden, hidden, tokens, dtype, precision)
        self.attention_delta = _launch_attention_delta.bind(
            attention_grid, (seq, hidden, heads, head_dim, scale * _LOG2E, 3 * hidden, hidden), **attention)
        self.attention_backward = _launch_attention_bwd.bind(
            attention_grid, (seq, hidden, heads, head_dim, scale * _LOG2E, scale, 3 * hidden, hidden, 3 * hidden),
            **attention)
        self.d_x = _Product(tokens, hidden, 3 * hidden, dtype, precision, b_row=4 * hidden)
        # The key bias adds q_n . b_k to every score of query n alike, and a softmax ignores a shift common to
        # all its scores: the output does not depend on b_k, whose gradient is exactly zero. Its column sum
        # would be fp32 noise around zero, which was our largest error against float64 (KERNELS.md).
        self.transpose_d_qkv = _Transposes(1, tokens, 3 * hidden, dtype, column_sums=any(has_bias[:3]),
                                           unsummed=range(hidden, 2 * hidden))
        self.d_qkv_weight = _Product(3 * hidden, hidden, tokens, dtype, precision)


_WEIGHTS = ("q_weight", "k_weight", "v_weight", "out_weight")
_BIASES = ("q_bias", "k_bias", "v_bias", "out_bias")


def _checked_call(x, weights, biases, heads: int, kernel_size: int, dilation: int, precision: str) -> None:
    """Refuse, with what to pass, a call the kernels cannot take (see :mod:`plugins._arguments`): tensors described
    as ``(shape, dtype, device)``, the weights and biases of q, k, v and out."""
    check_precision(precision)
    check_tensors({"hidden_states": x, **dict(zip(_WEIGHTS, weights)), **dict(zip(_BIASES, biases))})
    if len(x[0]) != 3:
        raise ValueError(f"hidden_states must be [batch, seq, hidden], got {tuple(x[0])}")
    batch, seq, hidden = x[0]
    if hidden < 1 or heads < 1 or hidden % heads or kernel_size <= 0 or kernel_size % 2 == 0 or dilation < 1:
        raise ValueError("hidden must be positive and divide by heads; kernel_size must be positive and odd; "
                         "dilation >= 1")
    # the largest buffers the kernels index: q, k and v of every token side by side, and the backward's transposed
    # weights side by side
    check_offsets(f"q, k and v of {batch} x {seq} tokens, [batch * seq, 3 * hidden]", batch * seq * 3 * hidden - 1)
    check_offsets(f"the transposed weights, [hidden, 4 * hidden] at hidden {hidden}", 4 * hidden * hidden - 1)
    for name, weight in zip(_WEIGHTS, weights):
        if weight is None:
            raise ValueError(f"{name} is required")
        check_shape(name, weight, (hidden, hidden))
    for name, bias in zip(_BIASES, biases):
        check_shape(name, bias, (hidden,))
    if len({bias is None for bias in biases[:3]}) > 1:  # one fused projection, with one bias or none
        raise ValueError("give q_bias, k_bias and v_bias all three, or none of them")


@functools.lru_cache(maxsize=64)
def _plan(x, weights, biases, heads, kernel_size, dilation, scale, precision, device) -> _Plan:
    """The plan of a call signature, its call checked first: tensors as ``(shape, dtype, device)`` (a bias None when
    absent). Every part of the key is something a launch specializes on or a check reads."""
    _checked_call(x, weights, biases, heads, kernel_size, dilation, precision)
    scale = 1.0 / math.sqrt(x[0][-1] // heads) if scale is None else scale
    return _Plan(x[0], x[1], tuple(bias is not None for bias in biases), heads, kernel_size, dilation, scale,
                 precision)


def _plan_of(x, weights, biases, heads: int, kernel_size: int, dilation: int, scale: Optional[float],
             precision: str) -> _Plan:
    """The plan of a call on these tensors (contiguous and aligned, see :func:`aligned`): ``weights`` and
    ``biases`` of q, k, v and out, in that order (None for an absent bias)."""
    return _plan(described(x, "hidden_states"), tuple(map(described, weights, _WEIGHTS)),
                 tuple(map(described, biases, _BIASES)), whole_number("heads", heads),
                 whole_number("kernel_size", kernel_size), whole_number("dilation", dilation), scale, precision,
                 launch_device())


class _FusedNeighborhoodAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias, out_weight, out_bias, plan):
        x = aligned(x)  # the backward transposes it with attn, of one stride
        weights = [aligned(w) for w in (q_weight, k_weight, v_weight, out_weight)]
        biases = [None if b is None else aligned(b) for b in (q_bias, k_bias, v_bias, out_bias)]
        empty = dict(device=x.device, dtype=x.dtype)
        qkv = plan.qkv_projection(x, weights[:3], torch.empty(plan.tokens, 3 * plan.hidden, **empty), biases[:3])
        attn = torch.empty(plan.tokens, plan.hidden, **empty)
        lse = torch.empty(plan.tokens, plan.heads, device=x.device, dtype=torch.float32)
        plan.attention(qkv, attn, lse)
        out = plan.out_projection(attn, weights[3:], torch.empty(plan.shape, **empty), biases[3:])
        ctx.save_for_backward(x, *weights, qkv, attn, lse)
        ctx.plan = plan
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, q_weight, k_weight, v_weight, out_weight, qkv, attn, lse = ctx.saved_tensors
        plan = ctx.plan
        hidden = plan.hidden
        dout = aligned(grad_out)  # transposed with x and attn: one stride
        empty = dict(device=x.device, dtype=x.dtype)

        # Two launches transpose every operand that exists before the attention's backward: the activations
        # (stacked: dout^T, attn^T, x^T, with dbo = dout's column sums) and the weights (side by side:
        # Wo^T | Wq^T | Wk^T | Wv^T, so that [Wq; Wk; Wv], read K-contiguous, is a slice).
        activations_t, d_out_bias = plan.transpose_activations((dout, attn, x))                        # [3H, M]
        weights_t, _ = plan.transpose_weights((out_weight, q_weight, k_weight, v_weight))             # [H, 4H]
        dattn = plan.d_attn(dout, (weights_t,), torch.empty(plan.tokens, hidden, **empty))
        d_out_weight = plan.d_out_weight(activations_t, (activations_t[hidden:],), torch.empty(hidden, hidden, **empty))
        dqkv = torch.empty_like(qkv)
        delta = torch.empty_like(lse)
        plan.attention_delta(qkv, dattn, lse, delta)
        plan.attention_backward(qkv, dattn, lse, delta, dqkv)
        dx = plan.d_x(dqkv, (weights_t[:, hidden:],), torch.empty(plan.shape, **empty))
        dqkv_t, d_b_qkv = plan.transpose_d_qkv((dqkv,))                                                # [3H, M]
        d_w_qkv = plan.d_qkv_weight(dqkv_t, (activations_t[2 * hidden:],), torch.empty(3 * hidden, hidden, **empty))

        d_out_bias = None if d_out_bias is None else d_out_bias.to(x.dtype)
        d_b_qkv = None if d_b_qkv is None else d_b_qkv.to(x.dtype)

        grads = [dx]
        for index in range(3):
            grads.append(d_w_qkv[index * hidden:(index + 1) * hidden])
            grads.append(d_b_qkv[index * hidden:(index + 1) * hidden] if plan.has_bias[index] else None)
        grads += [d_out_weight, d_out_bias, None]
        return tuple(grads)


_apply_fused_neighborhood_attention = lean_apply(_FusedNeighborhoodAttention)


def fused_neighborhood_attention_triton(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias,
                                        out_weight, out_bias, *, heads: int, kernel_size: int, dilation: int,
                                        scale: Optional[float] = None,
                                        precision: str = FP32_DOT_PRECISION) -> torch.Tensor:
    """Same contract as ``reference.fused_neighborhood_attention_torch``; differentiable.

    fp32 projections multiply as ``precision`` says (``tl.dot``'s ``input_precision``: TF32 by default,
    ``PRECISE_FP32_DOT_PRECISION`` for fp32-grade results); the neighborhood softmax and weighted sums
    run in fp32. Returns ``[batch, seq, hidden]`` in the input dtype; ``scale`` is ``1 / sqrt(head_dim)`` when None.
    A call the kernels cannot take raises TypeError or ValueError (checked once a call signature, in its plan).
    """
    plan = _plan_of(hidden_states, (q_weight, k_weight, v_weight, out_weight), (q_bias, k_bias, v_bias, out_bias),
                    heads, kernel_size, dilation, None if scale is None else float(scale), precision)
    return _apply_fused_neighborhood_attention(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias,
                                               out_weight, out_bias, plan)


# ----------------------------------------------------------------------------- records

_AUTOTUNED = {
    "_linear_matmul_kernel": _linear_matmul_kernel,
    "_neighborhood_attention_fwd_kernel": _neighborhood_attention_fwd_kernel,
    "_neighborhood_attention_delta_kernel": _neighborhood_attention_delta_kernel,
    "_neighborhood_attention_bwd_kernel": _neighborhood_attention_bwd_kernel,
}


def tuned_configs() -> dict[str, list[dict]]:
    """Every autotuned choice made so far in this process (see :func:`plugins._triton_launcher.tuned_configs`)."""
    return autotuned_choices(_AUTOTUNED)


def implementation_record(precision: str = FP32_DOT_PRECISION) -> dict:
    """What a run records about this implementation at ``precision``: versions, precision and tuned configs."""
    return {"module": __name__, "triton": triton.__version__, "fp32_dot_precision": precision,
            "tf32": precision == "tf32",
            "autotuned": tuned_configs()}
