"""The fused neighborhood attention references and Triton kernels, checked in the Triton interpreter.

Small irregular sizes, fresh random inputs every run (the seed is in each failure
message), outputs poisoned with NaN so an element a kernel forgets to write fails,
forward and every gradient compared with the float64 reference by relative L2 error.
"""

import pytest
import torch

from plugins.fused_neighborhood_attention import reference
from plugins.fused_neighborhood_attention import triton_kernels

from .kernel_support import backward_both, fresh_seed, relative_error, upstream_gradient

pytestmark = pytest.mark.database_free

TOLERANCE = {torch.float32: 2e-3, torch.bfloat16: 2e-2, torch.float16: 5e-3}
"""Relative L2 error allowed against float64, per dtype (fp32 allows TF32 projections on a GPU)."""

INTERPRETER_FP32_TOLERANCE = 1e-5
"""Under the interpreter, fp32 dots are plain fp32: hold the kernels to that."""

TF32, PRECISE = triton_kernels.FP32_DOT_PRECISION, triton_kernels.PRECISE_FP32_DOT_PRECISION
CASES = [  # seq, hidden, heads, kernel_size, dilation, dtype, bias, fp32 dot precision
    (37, 48, 3, 5, 2, torch.float32, True, TF32),
    (29, 32, 2, 3, 1, torch.float32, True, TF32),
    (23, 40, 5, 7, 3, torch.float32, False, TF32),
    (70, 32, 2, 15, 4, torch.float32, True, TF32),  # a window wider than the smallest tile: fewer configs fit
    (37, 48, 3, 5, 2, torch.bfloat16, True, TF32),
    (31, 48, 3, 5, 2, torch.float32, True, PRECISE),
    (41, 64, 8, 13, 3, torch.float16, True, TF32),
    (25, 64, 16, 9, 1, torch.float32, False, TF32),
]


def workload(seq, hidden, dtype, bias, seed):
    return reference.make_workload({"batch": 2, "seq": seq, "hidden": hidden, "bias": bias}, dtype, "cpu", seed)


@pytest.mark.parametrize("dilation", [1, 2])
def test_torch_reference_and_gather_agree_with_float64(dilation):
    seed = fresh_seed()
    tensors = workload(37, 48, torch.float32, True, seed)
    options = dict(heads=3, kernel_size=5, dilation=dilation)
    expected = reference.fused_neighborhood_attention_float64(**tensors, **options)
    assert expected.dtype == torch.float64
    torch_error = relative_error(reference.fused_neighborhood_attention_torch(**tensors, **options), expected)
    gather_error = relative_error(reference.fused_neighborhood_attention_gather(**tensors, **options), expected)
    assert torch_error < 1e-5, f"seed {seed}: torch reference error {torch_error:.2e}"
    assert gather_error < 1e-5, f"seed {seed}: gather formulation error {gather_error:.2e}"


def test_neighborhood_mask_matches_offsets():
    mask = reference.neighborhood_mask(11, 5, 2)
    for i in range(11):
        expected = {i + offset for offset in reference.neighbor_offsets(5, 2) if 0 <= i + offset < 11}
        assert set(torch.nonzero(mask[i]).flatten().tolist()) == expected
    assert torch.equal(mask, mask.T), "the neighborhood relation is symmetric"


@pytest.mark.parametrize("seq, hidden, heads, kernel_size, dilation, dtype, bias, precision", CASES)
def test_triton_forward_and_backward_match_float64(poisoned_allocations, seq, hidden, heads, kernel_size,
                                                   dilation, dtype, bias, precision):
    check_against_float64(seq, hidden, heads, kernel_size, dilation, dtype, bias, precision)


SATURATED_OPTIONS = dict(heads=2, kernel_size=7, dilation=2)
SATURATED_CHECKED = ("hidden_states", "q_weight", "q_bias", "k_weight")


def saturated_gradients(function, dtype, seed: int, upcast: bool = False) -> dict:
    """The gradients of ``function`` (computed in float64 when ``upcast``) on a workload in ``dtype`` whose attention
    saturates: hidden states three times the workload's, and identity projections (exact in 16 bits), which leave
    the attention the only rounding. The upstream gradient is ``backward_both``'s (:func:`upstream_gradient`)."""
    hidden = 16
    tensors = workload(9, hidden, dtype, True, seed)
    tensors["hidden_states"] = (tensors["hidden_states"].float() * 3).to(dtype)
    for part in ("q", "k", "v", "out"):
        tensors[f"{part}_weight"] = torch.eye(hidden, dtype=dtype)
        tensors[f"{part}_bias"] = torch.zeros(hidden, dtype=dtype)
    leaves = {name: (t.double() if upcast else t.clone()).requires_grad_(True) for name, t in tensors.items()}
    out = function(**leaves, **SATURATED_OPTIONS)
    out.backward(upstream_gradient(out.shape, dtype, seed).to(out.dtype))
    return {name: leaf.grad for name, leaf in leaves.items()}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_16_bit_gradients_of_saturated_attention_match_float64(poisoned_allocations, dtype):
    """Where the attention saturates, every score's gradient ``p * (dp - delta)`` nearly cancels, so ``delta``
    must come from the same fp32 ``p`` and ``dp``: taken from the attention output rounded to 16 bits it was
    most of the q and k gradients (bf16: 0.5-2.5 relative error here, torch in bf16 0.06-0.17). Several seeds:
    a cancellation can miss one."""
    for seed in fresh_seed() + torch.arange(4):
        ours = saturated_gradients(triton_kernels.fused_neighborhood_attention_triton, dtype, int(seed))
        exact = saturated_gradients(reference.fused_neighborhood_attention_float64, dtype, int(seed), upcast=True)
        for name in SATURATED_CHECKED:
            error = relative_error(ours[name], exact[name])
            assert error < 2 * TOLERANCE[dtype], f"seed {seed}: gradient of {name} error {error:.2e}"


def test_fp32_gradients_of_saturated_attention_are_as_accurate_as_torch(poisoned_allocations):
    """The backward recomputes ``p`` from ``lse``: for large scores they sum to 1 + eps, and unless ``delta`` is
    divided by that sum, eps * delta lands in every near-zero ``ds`` (10x torch's fp32 error here)."""
    for seed in fresh_seed() + torch.arange(4):
        ours = saturated_gradients(triton_kernels.fused_neighborhood_attention_triton, torch.float32, int(seed))
        same_dtype = saturated_gradients(reference.fused_neighborhood_attention_torch, torch.float32, int(seed))
        exact = saturated_gradients(reference.fused_neighborhood_attention_float64, torch.float32, int(seed),
                                    upcast=True)
        for name in SATURATED_CHECKED:
            error, torch_error = relative_error(ours[name], exact[name]), relative_error(same_dtype[name], exact[name])
            assert error < 3 * torch_error + 1e-6, (
                f"seed {seed}: gradient of {name} error {error:.2e}, torch in fp32 {torch_error:.2e}")


@pytest.fixture
def one_split_a_program(monkeypatch):
    """The QKV GEMM's other kind of program, one split's tile each, which the autotuner picks for large
    GEMMs on a GPU (the interpreter's one config computes every split's tile in a program)."""
    import triton

    kernel = triton_kernels._linear_matmul_kernel
    [config] = kernel.configs
    monkeypatch.setattr(kernel, "configs", [triton.Config({**config.kwargs, "SPLITS_TOGETHER": False},
                                                          num_warps=config.num_warps, num_stages=config.num_stages)])


@pytest.mark.parametrize("seq, hidden, heads, kernel_size, dilation, dtype, bias, precision",
                         [CASES[0], CASES[2], CASES[6]])
def test_triton_with_one_split_a_program_matches_float64(poisoned_allocations, one_split_a_program, seq, hidden,
                                                         heads, kernel_size, dilation, dtype, bias, precision):
    check_against_float64(seq, hidden, heads, kernel_size, dilation, dtype, bias, precision)


def check_against_float64(seq, hidden, heads, kernel_size, dilation, dtype, bias, precision):
    """Forward and every gradient of the Triton kernels against the float64 reference, on fresh inputs."""
    seed = fresh_seed()
    options = dict(heads=heads, kernel_size=kernel_size, dilation=dilation)
    tensors = workload(seq, hidden, dtype, bias, seed)
    leaves = {name: None if t is None else t.clone().requires_grad_(True) for name, t in tensors.items()}
    leaves64 = {name: None if t is None else t.double().requires_grad_(True) for name, t in tensors.items()}

    out = triton_kernels.fused_neighborhood_attention_triton(**leaves, **options, precision=precision)
    expected = reference.fused_neighborhood_attention_float64(**leaves64, **options)
    assert out.dtype == dtype and out.shape == expected.shape
    assert torch.isfinite(out).all(), f"seed {seed}: non-finite or unwritten output"
    tolerance = INTERPRETER_FP32_TOLERANCE if dtype == torch.float32 else TOLERANCE[dtype]
    error = relative_error(out, expected)
    assert error < tolerance, f"seed {seed}: forward error {error:.2e} >= {tolerance:.0e}"

    backward_both(out, expected, seed)
    scale = leaves64["hidden_states"].grad.norm()
    for name, leaf in leaves.items():
        if leaf is None:
            continue
        assert torch.isfinite(leaf.grad).all(), f"seed {seed}: non-finite gradient of {name}"
        want = leaves64[name].grad
        if name == "k_bias":  # exactly zero: a shift of every key score cancels in the softmax
            assert not leaf.grad.any(), f"seed {seed}: the key bias's gradient is exactly zero, not summed noise"
            error = ((leaf.grad.double() - want).norm() / scale).item()
        else:
            error = relative_error(leaf.grad, want)
        assert error < tolerance * 2, f"seed {seed}: gradient of {name} error {error:.2e}"


def test_triton_records_its_precision_and_configs():
    record = triton_kernels.implementation_record()
    assert record["fp32_dot_precision"] == TF32
    assert record["tf32"] is True
    precise = triton_kernels.implementation_record(PRECISE)
    assert precise["fp32_dot_precision"] == PRECISE and precise["tf32"] is False
    assert set(record["autotuned"]) == {"_linear_matmul_kernel", "_neighborhood_attention_fwd_kernel",
                                        "_neighborhood_attention_delta_kernel", "_neighborhood_attention_bwd_kernel"}


def test_floors():
    values = {"batch": 2, "seq": 1024, "hidden": 512, "kernel_size": 7}
    assert reference.flop_count(values) == 4 * 2 * 2048 * 512 * 512 + 4 * 2048 * 512 * 7
    assert reference.min_bytes(values, "fp32") == 4 * (2 * 2048 * 512 + 4 * 512 * 512 + 4 * 512)


def test_gemm_autotuning_keeps_only_tiles_whose_accumulators_fit_in_registers():
    """Three splits per program triple the accumulators: big tiles must not even be compiled; one split a
    program leaves room for a 128 x 256 tile at 8 warps."""
    import triton

    def config(m, n, warps, together):
        return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": 32, "GROUP_M": 8, "SPLITS_TOGETHER": together},
                             num_warps=warps)

    together = [config(128, 128, 8, True), config(128, 64, 8, True), config(128, 64, 4, True), config(64, 64, 4, True)]
    apart = [config(128, 256, 8, False), config(128, 256, 4, False), config(64, 64, 4, False)]
    kept = triton_kernels._fitting_configs(together + apart, {}, NUM_SPLITS=3)
    assert [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.kwargs["SPLITS_TOGETHER"]) for c in kept] == [
        (128, 64, 8, True), (64, 64, 4, True), (128, 256, 8, False), (64, 64, 4, False)]
    # with one split both kinds of program are the same: only one of each is compiled
    assert triton_kernels._fitting_configs(together + apart, {}, NUM_SPLITS=1) == together


def test_gemm_autotuning_skips_fp32_tiles_whose_stages_overflow_shared_memory():
    """(128 + 256) x 64 fp32 operands in three stages need 288 KB, more than Hopper's 227; in bf16, 144 KB."""
    import triton

    def config(m, n, k, stages, together=True):
        return triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8, "SPLITS_TOGETHER": together},
                             num_warps=8, num_stages=stages)

    candidates = [config(128, 256, 64, 3), config(128, 256, 32, 4), config(128, 128, 64, 3)]
    fp32 = triton_kernels._fitting_configs(candidates, {"a_ptr": torch.empty(1, dtype=torch.float32)}, NUM_SPLITS=1)
    assert fp32 == candidates[1:]
    bf16 = triton_kernels._fitting_configs(candidates, {"a_ptr": torch.empty(1, dtype=torch.bfloat16)}, NUM_SPLITS=1)
    assert bf16 == candidates
    # a program of one of three splits has the registers for 128 x 256, not the shared memory in fp32
    apart = [config(128, 256, 64, 3, together=False), config(128, 256, 32, 4, together=False)]
    assert triton_kernels._fitting_configs(apart, {"a_ptr": torch.empty(1)}, NUM_SPLITS=3) == apart[1:]


@pytest.mark.parametrize("rows, cols, dtype",
                         [(70, 45, torch.float32), (129, 64, torch.float16), (3, 130, torch.bfloat16)])
def test_transpose_writes_every_element_and_sums_the_columns(poisoned_allocations, rows, cols, dtype):
    """The backward's operands are transposed copies (K-contiguous for the tensor cores), up to four from a
    launch, stacked or side by side; bias gradients the first one's column sums, but where known to be 0."""
    matrices = [torch.randn(rows, cols).to(dtype) for _ in range(3)]
    stacked, sums = triton_kernels._Transposes(3, rows, cols, dtype, column_sums=True)(matrices)
    assert stacked.shape == (3 * cols, rows) and stacked.is_contiguous()
    assert torch.equal(stacked, torch.cat([x.t() for x in matrices]))
    assert sums.dtype == torch.float32
    torch.testing.assert_close(sums, matrices[0].float().sum(0), rtol=1e-5, atol=1e-5)

    side_by_side, sums = triton_kernels._Transposes(2, rows, cols, dtype, side_by_side=True, column_sums=True,
                                                    unsummed=range(3, 20))(matrices[:2])
    assert side_by_side.shape == (cols, 2 * rows)
    assert torch.equal(side_by_side, torch.cat([x.t() for x in matrices[:2]], dim=1))
    expected = matrices[0].float().sum(0)
    expected[3:20] = 0
    torch.testing.assert_close(sums, expected, rtol=1e-5, atol=1e-5)
    assert triton_kernels._Transposes(3, rows, cols, dtype)(matrices)[1] is None


def test_strided_inputs_and_upstream_gradient(poisoned_allocations):
    """Hidden states, a weight and the upstream gradient as strided views (a slice of a wider tensor, a
    transposed weight): the kernels copy what they must, and every gradient still matches float64."""
    seed = fresh_seed()
    options = dict(heads=2, kernel_size=5, dilation=1)
    tensors = workload(19, 32, torch.float32, True, seed)
    wider = torch.randn(2, 19, 48, generator=torch.Generator().manual_seed(seed))
    wider[..., :32] = tensors["hidden_states"]
    tensors["hidden_states"] = wider[..., :32]
    tensors["k_weight"] = tensors["k_weight"].t().contiguous().t()
    leaves = {name: t.detach().requires_grad_(True) for name, t in tensors.items()}  # views keep their strides
    assert not leaves["hidden_states"].is_contiguous() and not leaves["k_weight"].is_contiguous()
    leaves64 = {name: t.detach().double().requires_grad_(True) for name, t in tensors.items()}

    out = triton_kernels.fused_neighborhood_attention_triton(**leaves, **options)
    expected = reference.fused_neighborhood_attention_float64(**leaves64, **options)
    assert relative_error(out, expected) < INTERPRETER_FP32_TOLERANCE
    upstream = torch.randn(2, 32, 19, generator=torch.Generator().manual_seed(seed + 1)).transpose(1, 2)
    out.backward(upstream)
    expected.backward(upstream.double())
    for name in ("hidden_states", "q_weight", "k_weight", "v_weight", "out_weight", "q_bias", "out_bias"):
        error = relative_error(leaves[name].grad, leaves64[name].grad)
        assert error < INTERPRETER_FP32_TOLERANCE * 2, f"seed {seed}: gradient of {name} error {error:.2e}"


def test_a_plan_serves_its_call_signature_alone_and_keeps_no_data(poisoned_allocations):
    """Shapes, grids and launches are worked out once a call signature (``_plan``): a later call at the same
    signature reuses them with its own tensors, biases or none are signatures of their own, and hidden states
    starting off 16 bytes in their storage are copied to aligned ones; every output and gradient matches float64."""
    seed = fresh_seed()
    options = dict(heads=2, kernel_size=5, dilation=1)
    calls = [workload(17, 32, torch.float32, bias, seed + index) for index, bias in enumerate((True, False, True))]
    shifted = torch.empty(calls[0]["hidden_states"].numel() + 1)[1:].view_as(calls[0]["hidden_states"])
    calls.append({**calls[0], "hidden_states": shifted.copy_(calls[0]["hidden_states"])})
    assert calls[-1]["hidden_states"].data_ptr() % 16 != 0
    triton_kernels._plan.cache_clear()
    for tensors in calls:
        leaves = {name: None if t is None else t.detach().requires_grad_(True) for name, t in tensors.items()}
        leaves64 = {name: None if t is None else t.detach().double().requires_grad_(True)
                    for name, t in tensors.items()}
        out = triton_kernels.fused_neighborhood_attention_triton(**leaves, **options)
        expected = reference.fused_neighborhood_attention_float64(**leaves64, **options)
        assert relative_error(out, expected) < INTERPRETER_FP32_TOLERANCE, f"seed {seed}"
        backward_both(out, expected, seed)
        for name, leaf in leaves.items():
            if leaf is not None and name != "k_bias":  # exactly 0 here, float64 noise there
                error = relative_error(leaf.grad, leaves64[name].grad)
                assert error < INTERPRETER_FP32_TOLERANCE * 2, f"seed {seed}: gradient of {name} error {error:.2e}"
    assert triton_kernels._plan.cache_info().currsize == 2  # with biases, without
    assert triton_kernels._plan.cache_info().hits == 2


def call(changes=None, **keywords):
    """``fused_neighborhood_attention_triton`` on a small workload, its tensors changed as ``changes`` says."""
    tensors = workload(9, 8, torch.float32, True, 0)
    arguments = {name: tensor for name, tensor in tensors.items() if name != "grad_output"}
    arguments.update(changes or {})
    return triton_kernels.fused_neighborhood_attention_triton(
        *arguments.values(), **{"heads": 2, "kernel_size": 3, "dilation": 1, **keywords})


@pytest.mark.parametrize("changes, keywords, error, message", [
    ({"q_bias": None}, {}, ValueError, "give q_bias, k_bias and v_bias all three, or none of them"),
    ({"k_bias": None, "v_bias": None}, {}, ValueError, "all three, or none"),
    ({"q_weight": torch.randn(16, 8)}, {}, ValueError, "q_weight must have the shape [8, 8], not [16, 8]"),
    ({"out_weight": torch.randn(8, 4)}, {}, ValueError, "out_weight must have the shape [8, 8]"),
    ({"out_bias": torch.randn(1)}, {}, ValueError, "out_bias must have the shape [8], not [1]"),
    ({"v_bias": torch.randn(16)}, {}, ValueError, "v_bias must have the shape [8]"),
    ({"out_weight": None}, {}, ValueError, "out_weight is required"),
    ({"hidden_states": torch.randint(-3, 3, (1, 9, 8))}, {}, TypeError, "hidden_states must be float16, bfloat16"),
    ({"out_bias": torch.randn(8, dtype=torch.float64)}, {}, TypeError, "out_bias is torch.float64"),
    ({}, {"kernel_size": 3.0}, TypeError, "kernel_size must be an integer, not 3.0"),
    ({}, {"heads": 2.0}, TypeError, "heads must be an integer"),
    ({}, {"dilation": 1.5}, TypeError, "dilation must be an integer"),
    ({}, {"precision": "bogus"}, ValueError, "precision must be one of"),
    ({"hidden_states": torch.randn(9, 8)}, {}, ValueError, "hidden_states must be [batch, seq, hidden]"),
])
def test_what_the_kernels_cannot_take_is_refused_at_the_call(changes, keywords, error, message):
    with pytest.raises(error) as refused:
        call(changes, **keywords)
    assert message in str(refused.value)


def test_a_zero_hidden_size_is_refused_at_the_call():
    """hidden 0 divides by any head count: it reached ``1 / sqrt(head_dim)`` and raised ZeroDivisionError."""
    empty = torch.empty(0, 0)
    with pytest.raises(ValueError, match="hidden must be positive"):
        triton_kernels.fused_neighborhood_attention_triton(torch.empty(1, 9, 0), *[empty, torch.empty(0)] * 4,
                                                           heads=1, kernel_size=3, dilation=1)


def layer_on_meta(batch, seq, hidden):
    """Hidden states and q, k, v, out weights of these sizes, with no memory (``meta``), and no biases."""
    weight = torch.empty(hidden, hidden, device="meta")
    return torch.empty(batch, seq, hidden, device="meta"), *[weight, None] * 4


@pytest.mark.parametrize("batch, seq, hidden", [(1, 720896, 1024), (8, 65536, 4096), (1, 1, 23176)])
def test_shapes_whose_offsets_pass_32_bits_are_refused_at_the_call(batch, seq, hidden):
    """The kernels index qkv ``[batch * seq, 3 * hidden]`` (``rows * stride`` in 32 bits, as Triton multiplies two
    32-bit integers) and the backward's transposed weights ``[hidden, 4 * hidden]``: at 720,896 tokens of 1024
    (1.5 GB of bf16 hidden states) the first holds more than 2**31 elements, and offsets past it would wrap."""
    with pytest.raises(ValueError, match="would compute offsets up to .* in 32 bits"):
        triton_kernels.fused_neighborhood_attention_triton(*layer_on_meta(batch, seq, hidden), heads=8,
                                                           kernel_size=3, dilation=1)


def test_shapes_just_inside_32_bit_offsets_are_taken():
    for batch, seq, hidden in [(1, 699050, 1024), (1, 1, 23168)]:
        x, *parameters = (triton_kernels.described(tensor, "tensor") for tensor in layer_on_meta(batch, seq, hidden))
        triton_kernels._checked_call(x, parameters[0::2], parameters[1::2], 8, 3, 1, "tf32")


def test_a_second_derivative_is_refused_not_silently_zero():
    tensors = workload(9, 8, torch.float32, True, 0)
    hidden = tensors["hidden_states"].requires_grad_()
    weight = tensors["q_weight"].requires_grad_()
    out = call({"hidden_states": hidden, "q_weight": weight})
    (grad_hidden,) = torch.autograd.grad(out.square().sum(), (hidden,), create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad_hidden.sum().backward()
