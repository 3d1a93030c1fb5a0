"""The multi-token attention references and Triton kernels, checked in the Triton interpreter.

Small irregular sizes (L 13..150, odd or multiples of 4 and 8, k 3 to 35, groups, odd head counts and 8 and
16 heads, no bias, fp32, bf16 and fp16), fresh random inputs every run (the seed is in each failure message),
outputs poisoned with NaN, forward and every gradient compared with the float64 reference by relative L2 error.
"""

import pytest
import torch
import triton

from plugins.multi_token_attention import reference
from plugins.multi_token_attention import triton_kernels

from .kernel_support import backward_both, fresh_seed, relative_error

pytestmark = pytest.mark.database_free

TOLERANCE = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}
"""Relative L2 error allowed against float64, per dtype. bf16 and fp16 outputs carry their own rounding
(bf16 about 1.7e-3 when rounded to nearest, fp16 eight times less; the interpreter truncates, twice that)."""

CASES = [  # seq, k, groups, heads_in, heads_out, bias, dtype
    (19, 3, 1, 4, 4, True, torch.float32),
    (19, 5, 1, 4, 4, True, torch.bfloat16),
    (21, 3, 2, 4, 6, True, torch.float32),
    (23, 3, 1, 3, 5, False, torch.float32),
    (45, 3, 1, 2, 3, True, torch.float32),  # rows longer than the interpreter's 32-column chunks
    (150, 3, 1, 2, 2, True, torch.bfloat16),  # three forward programs a row; zeros from column 128 by the softmax pass
    (27, 19, 1, 2, 2, True, torch.float32),  # taps past 16 columns: 32-column subtiles
    (23, 35, 1, 2, 2, True, torch.bfloat16),  # 64-column chunks, a 64-column window of P in the weight strips
    (17, 5, 1, 8, 8, True, torch.float16),
    (13, 5, 1, 16, 16, True, torch.float32),  # fp32, 16 output heads, k <= 5: the im2col convolution by tap, both ways
    (21, 3, 1, 6, 16, True, torch.float32),  # ... gathered (6 input heads), forward only, 54 taps: a part-filled block
    (15, 7, 1, 16, 16, False, torch.float32),  # k 7 at 16 heads: im2col by tap too
    (29, 3, 2, 16, 16, False, torch.float32),  # ... in groups, tiles past the diagonal, no bias
    (23, 7, 1, 12, 16, True, torch.float32),  # k 7 from 12 input heads: banded both ways, P chunk-major
    (37, 5, 1, 16, 8, True, torch.float32),  # the forward banded, the backward's dP (16 heads out) im2col, gathered
    (33, 7, 1, 8, 8, False, torch.bfloat16),
    (70, 5, 2, 4, 6, True, torch.float16),  # two forward head groups (the second part empty), zero tiles, groups
    (25, 3, 1, 16, 16, True, torch.float16),  # 16-bit weight strips of 8 columns, two input-head blocks
    (41, 5, 1, 12, 10, False, torch.bfloat16),  # ... the last blocks part-filled, more rows than one step
    (22, 5, 1, 6, 24, True, torch.float16),  # ... two output-head blocks, the second part-filled
    (31, 5, 4, 8, 12, False, torch.float16),  # ... over four groups, no bias
    (26, 3, 1, 16, 4, True, torch.bfloat16),  # 16-column strips (4 heads out), four input-head blocks
    (113, 9, 1, 2, 3, True, torch.float16),  # weight strips' first steps unmasked up to the pad's last column
    (45, 13, 1, 8, 8, True, torch.float16),  # 8-column strips whose window of P reaches past it: first step masked
    (30, 21, 1, 2, 2, True, torch.bfloat16),  # ... and 16-column ones
    (40, 5, 1, 8, 8, True, torch.float16),  # L a multiple of 8, not 16: the kernels take it as 5 x 8
    (36, 3, 1, 16, 16, True, torch.float32),  # ... of 4: the im2col kernels, both ways
    (48, 5, 1, 32, 16, True, torch.float32),  # ... of 16, which the im2col convolution takes unspecialized; 32 heads in
]


def workload(seq, k, groups, heads_in, heads_out, bias, dtype, seed):
    values = {"batch": 2, "seq": seq, "k": k, "groups": groups, "heads_in": heads_in, "heads_out": heads_out,
              "bias": bias}
    return reference.make_workload(values, dtype, "cpu", seed)


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_reference_agrees_with_float64(k, dtype):
    seed = fresh_seed()
    tensors = workload(19, k, 1, 4, 4, True, dtype, seed)
    expected = reference.multi_token_attention_float64(**tensors)
    assert expected.dtype == torch.float64
    error = relative_error(reference.multi_token_attention_torch(**tensors), expected)
    assert error < TOLERANCE[dtype], f"seed {seed}: torch reference error {error:.2e}"


def test_reference_semantics():
    """Future positions are zero; with a single centre tap of 1 and no bias, out is the causal softmax."""
    scores = torch.randn(1, 1, 7, 7, dtype=torch.float64)
    weight = torch.zeros(1, 1, 3, 3, dtype=torch.float64)
    weight[0, 0, 1, 1] = 1.0
    out = reference.multi_token_attention_torch(scores, weight, None)
    causal = torch.softmax(scores.masked_fill(~reference.causal_mask(7), float("-inf")), dim=-1)
    assert torch.allclose(out, causal)
    assert (out[0, 0].triu(1) == 0).all()


@pytest.mark.parametrize("seq, k, groups, heads_in, heads_out, bias, dtype", CASES)
def test_triton_forward_and_backward_match_float64(poisoned_allocations, seq, k, groups, heads_in, heads_out, bias,
                                                   dtype):
    seed = fresh_seed()
    tensors = workload(seq, k, groups, heads_in, heads_out, bias, dtype, seed)
    leaves = {name: None if t is None else t.clone().requires_grad_(True) for name, t in tensors.items()}
    leaves64 = {name: None if t is None else t.double().requires_grad_(True) for name, t in tensors.items()}

    out = triton_kernels.multi_token_attention_triton(**leaves, groups=groups,
                                                      precision=triton_kernels.PRECISE_FP32_DOT_PRECISION)
    expected = reference.multi_token_attention_float64(**leaves64, groups=groups)
    assert out.dtype == dtype and out.shape == expected.shape
    assert torch.isfinite(out).all(), f"seed {seed}: non-finite or unwritten output"
    error = relative_error(out, expected)
    assert error < TOLERANCE[dtype], f"seed {seed}: forward error {error:.2e}"

    backward_both(out, expected, seed)
    for name, leaf in leaves.items():
        if leaf is None:
            continue
        assert torch.isfinite(leaf.grad).all(), f"seed {seed}: non-finite gradient of {name}"
        error = relative_error(leaf.grad, leaves64[name].grad)
        assert error < 2 * TOLERANCE[dtype], f"seed {seed}: gradient of {name} error {error:.2e}"


@pytest.mark.parametrize("seq", [13, 16, 20])
def test_output_rows_start_on_16_bytes(poisoned_allocations, seq):
    """At a length that is no multiple of 8 the output is a view of rows padded to one (the convolution stores them
    16 bytes at a time), in a buffer that holds the last row's padding, which the kernel fills with the causal
    mask's zeros; at a multiple of 8 it is contiguous. The values are the reference's either way."""
    seed = fresh_seed()
    tensors = workload(seq, 3, 1, 4, 4, True, torch.float16, seed)
    out = triton_kernels.multi_token_attention_triton(**tensors)
    row = -(-seq // 8) * 8
    assert out.stride() == (4 * seq * row, seq * row, row, 1)
    assert out.is_contiguous() == (seq == row)
    padded = out.as_strided((2, 4, seq, row), out.stride())
    assert (padded[..., seq:] == 0).all(), f"seed {seed}: padding not written"
    error = relative_error(out, reference.multi_token_attention_float64(**{
        name: None if t is None else t.double() for name, t in tensors.items()}))
    assert error < TOLERANCE[torch.float16], f"seed {seed}: forward error {error:.2e}"


def test_triton_records_its_configs():
    record = triton_kernels.implementation_record()
    assert set(record["autotuned"]) == {"_mta_pad_kernel", "_mta_conv_fwd_kernel", "_mta_conv_im2col_kernel",
                                        "_mta_bwd_scores_kernel", "_mta_bwd_weight_strips_kernel",
                                        "_mta_bwd_weight_im2col_kernel"}


def test_the_convolution_times_unrestricted_registers_only_at_lengths_with_no_factor_of_16():
    configs = [triton.Config({"BLOCK_M": 64}, num_warps=4, num_stages=stages, maxnreg=registers)
               for registers in (168, None) for stages in (2, 3)]
    for align in (1, 2, 4, 8):
        assert triton_kernels._conv_candidates(configs, {}, L_ALIGN=align) == configs
    assert triton_kernels._conv_candidates(configs, {}, L_ALIGN=16) == configs[:2]
    assert triton_kernels._mta_conv_fwd_kernel.early_config_prune is triton_kernels._conv_candidates


def test_floors():
    values = {"batch": 2, "seq": 1024, "heads_in": 4, "heads_out": 4, "k": 3}
    assert reference.min_bytes(values, "bf16") == 2 * (2 * 2 * 4 * 1024 * 1024 + 4 * 4 * 9 + 4)


def test_a_plan_serves_its_call_signature_alone_and_keeps_no_data(poisoned_allocations):
    """Shapes, grids and launches are worked out once a call signature (``_plan``): a later call at the same
    signature reuses them with its own tensors, and a bias or its absence, or a view starting off 16 bytes in its
    storage (copied to an aligned one), is a signature of its own or made one."""
    seed = fresh_seed()
    calls = []
    for bias in (True, False, True):
        tensors = workload(13, 3, 1, 4, 4, bias, torch.bfloat16, seed + len(calls))
        calls.append(tensors)
    shifted = torch.empty(calls[0]["scores"].numel() + 1, dtype=torch.bfloat16)[1:]
    calls.append({**calls[0], "scores": shifted.view_as(calls[0]["scores"]).copy_(calls[0]["scores"])})
    assert calls[-1]["scores"].data_ptr() % 16 != 0
    triton_kernels._plan.cache_clear()
    for tensors in calls:
        out = triton_kernels.multi_token_attention_triton(**tensors)
        error = relative_error(out, reference.multi_token_attention_float64(**tensors))
        assert error < TOLERANCE[torch.bfloat16], f"seed {seed}: forward error {error:.2e}"
    assert triton_kernels._plan.cache_info().currsize == 2  # with a bias, without
    assert triton_kernels._plan.cache_info().hits == 2


def tensors(seq=9, heads_in=2, heads_out=2, k=3, dtype=torch.float32):
    scores = torch.randn(1, heads_in, seq, seq, dtype=dtype)
    return scores, torch.randn(heads_out, heads_in, k, k, dtype=dtype), torch.randn(heads_out, dtype=dtype)


@pytest.mark.parametrize("change, error, message", [
    (lambda s, w, b: ((s.long(), w, b), {}), TypeError, "scores must be float16, bfloat16 or float32"),
    (lambda s, w, b: ((s.double(), w.double(), b.double()), {}), TypeError, "not torch.float64"),
    (lambda s, w, b: ((s.half(), w, b), {}), TypeError, "weight is torch.float32 and scores torch.float16"),
    (lambda s, w, b: ((s, w, b[:1]), {}), ValueError, "bias must have the shape [2], not [1]"),
    (lambda s, w, b: ((s, w, b[:, None]), {}), ValueError, "bias must have the shape [2]"),
    (lambda s, w, b: ((s, w, b), {"groups": 1.0}), TypeError, "groups must be an integer, not 1.0"),
    (lambda s, w, b: ((s, w, b), {"precision": "bogus"}), ValueError, "precision must be one of tf32, tf32x3, ieee"),
    (lambda s, w, b: ((s, w, list(b)), {}), TypeError, "bias must be a tensor, not list"),
    (lambda s, w, b: ((s, w.to("meta"), b), {}), ValueError, "weight is on meta and scores on cpu"),
    (lambda s, w, b: ((s[:, :, :0, :0], w, b), {}), ValueError, "with seq >= 1"),
    (lambda s, w, b: ((torch.randn(1, 4, 9, 9), torch.randn(3, 2, 3, 3), None), {"groups": 2}), ValueError,
     "heads_out a multiple of groups (2)"),
    (lambda s, w, b: ((s, torch.randn(2, 2, 4, 4), b), {}), ValueError, "k odd"),
])
def test_what_the_kernels_cannot_take_is_refused_at_the_call(change, error, message):
    arguments, keywords = change(*tensors())
    with pytest.raises(error) as refused:
        triton_kernels.multi_token_attention_triton(*arguments, **keywords)
    assert message in str(refused.value)


@pytest.mark.parametrize("heads_in, heads_out, seq", [(48, 4, 8192), (4, 48, 8192), (1, 1, 46341)])
def test_shapes_whose_offsets_pass_32_bits_are_refused_at_the_call(heads_in, heads_out, seq):
    """The banded convolutions step from one head's padded plane to the next by ``head * PLANE`` in 32 bits (as
    Triton multiplies two 32-bit integers), forward over P's ``heads_in`` planes and backward over G's ``heads_out``:
    at 48 heads of L 8192 (6.4 GB of bf16 scores a batch element) that passes 2**31 and would wrap, at 32 not yet
    (:func:`test_shapes_just_inside_32_bit_offsets_are_taken`); one plane alone does at L 46341."""
    scores = torch.empty(1, heads_in, seq, seq, dtype=torch.bfloat16, device="meta")
    weight = torch.empty(heads_out, heads_in, 3, 3, dtype=torch.bfloat16, device="meta")
    with pytest.raises(ValueError, match="would compute offsets up to .* in 32 bits"):
        triton_kernels.multi_token_attention_triton(scores, weight, None)


def test_shapes_just_inside_32_bit_offsets_are_taken():
    for heads, seq in [(32, 8192), (1, 46272)]:
        scores = torch.empty(1, heads, seq, seq, dtype=torch.bfloat16, device="meta")
        weight = torch.empty(heads, heads, 3, 3, dtype=torch.bfloat16, device="meta")
        triton_kernels._checked_call(triton_kernels.described(scores, "scores"),
                                     triton_kernels.described(weight, "weight"), None, 1, "tf32")


def test_an_empty_batch_gives_an_empty_output_and_zero_weight_gradients():
    scores, weight, bias = (tensor.requires_grad_() for tensor in tensors())
    empty = scores[:0].detach().requires_grad_()
    out = triton_kernels.multi_token_attention_triton(empty, weight, bias)
    assert out.shape == (0, 2, 9, 9)
    grads = torch.autograd.grad(out.sum(), (empty, weight, bias))
    assert grads[0].shape == empty.shape and not grads[1].any() and not grads[2].any()


def test_a_second_derivative_is_refused_not_silently_zero():
    scores, weight, bias = (tensor.requires_grad_() for tensor in tensors(seq=8))
    out = triton_kernels.multi_token_attention_triton(scores, weight, bias)
    (grad_scores,) = torch.autograd.grad(out.square().sum(), (scores,), create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad_scores.sum().backward()
