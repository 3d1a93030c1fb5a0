"""The one reference for multi-token attention, shared by every target and the tests.

For ``scores [batch, heads_in, seq, seq]``, ``weight [heads_out, heads_in/groups, k, k]``
and an optional ``bias [heads_out]`` (``k`` odd)::

    s = scores with every future key (column j > row i) set to -1e9      (mask before)
    p = softmax(s, dim=-1)                     p[i, j] = 0 for j > i; each row sums to 1
    c = conv2d(p, weight, bias, stride 1, padding k // 2, groups)      (cross-correlation,
        c[o, i, j] = bias[o] + sum_{ci, u, v} weight[o, ci, u, v] * p[ci', i + u - k//2,
        j + v - k//2], zero outside [0, seq) in both directions)
    out = c with every future position (j > i) set to 0                  (mask after)

This is the upstream benchmark's plain-torch module written as a function, same order
of operations and the same fill values (-1e9 before the softmax, 0 after the
convolution). Tensor names follow ``definition.py``: ``scores``, ``weight``, ``bias``.

* :func:`multi_token_attention_torch` computes in the inputs' dtype, as upstream does
  (in bf16 the probabilities are rounded to bf16 before the convolution).
* :func:`multi_token_attention_float64` is the correctness reference: the same
  function on float64 copies, returned in float64; gradients flow to the inputs.

:data:`FAMILY` binds them, with the inputs and the cost, for every target (:mod:`plugins._family`).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

import torch

from plugins._family import Family, Formulation
from plugins.multi_token_attention.definition import MULTI_TOKEN_ATTENTION

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}

MASK_FILL = -1e9
"""What future scores are replaced by before the softmax (upstream's value, not -inf)."""


def torch_dtype(dtype) -> torch.dtype:
    """``torch.bfloat16`` for ``"bf16"`` (``fp32``, ``fp16``, ``fp64`` likewise); torch dtypes pass through."""
    return DTYPES[dtype] if isinstance(dtype, str) else dtype


# ----------------------------------------------------------------------------- inputs


def make_parameters(heads_in: int, heads_out: int, k: int, *, groups: int = 1, bias: bool = True,
                    dtype=torch.bfloat16, device="cpu",
                    generator: Optional[torch.Generator] = None) -> dict[str, Optional[torch.Tensor]]:
    """``weight [heads_out, heads_in/groups, k, k]`` and ``bias [heads_out]`` (or ``None``).

    The weight is drawn like upstream's module (Kaiming-uniform with a = sqrt(5), i.e.
    uniform in ``±1/sqrt(fan_in)``, ``fan_in = heads_in/groups * k * k``). Upstream
    initialises the bias to zeros; here it is drawn from the same uniform so that a
    kernel which drops the bias fails the correctness check. Drawn on the CPU from
    ``generator``, then moved.
    """
    if heads_in % groups or heads_out % groups:
        raise ValueError(f"heads_in ({heads_in}) and heads_out ({heads_out}) must be divisible by groups ({groups})")
    bound = 1.0 / math.sqrt(heads_in // groups * k * k)
    weight = (torch.rand(heads_out, heads_in // groups, k, k, generator=generator, dtype=torch.float64) * 2 - 1) * bound
    params: dict[str, Optional[torch.Tensor]] = {"weight": weight.to(device=device, dtype=torch_dtype(dtype))}
    if bias:
        b = (torch.rand(heads_out, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        params["bias"] = b.to(device=device, dtype=torch_dtype(dtype))
    else:
        params["bias"] = None
    return params


def make_workload(values: Mapping, dtype="bf16", device="cpu", seed: int = 0) -> dict[str, Optional[torch.Tensor]]:
    """All tensors of one workload, keyed by their ``TensorSpec`` names, deterministic in ``seed``.

    ``values`` holds ``batch``, ``heads_in``, ``heads_out``, ``seq``, ``k`` and optionally
    ``groups`` (default 1) and ``bias`` (default true). ``scores`` is standard normal,
    like upstream's ``torch.randn``.
    """
    generator = torch.Generator().manual_seed(seed)
    batch, heads_in, seq = values["batch"], values["heads_in"], values["seq"]
    tensors: dict[str, Optional[torch.Tensor]] = {
        "scores": torch.randn(batch, heads_in, seq, seq, generator=generator, dtype=torch.float32)
        .to(device=device, dtype=torch_dtype(dtype))
    }
    tensors.update(make_parameters(heads_in, values["heads_out"], values["k"], groups=values.get("groups", 1),
                                   bias=values.get("bias", True), dtype=dtype, device=device, generator=generator))
    return tensors


# ----------------------------------------------------------------------------- formulations


def _check(scores: torch.Tensor, weight: torch.Tensor, groups: int) -> None:
    if scores.dim() != 4 or scores.shape[-1] != scores.shape[-2]:
        raise ValueError(f"scores must be [batch, heads_in, seq, seq], got {tuple(scores.shape)}")
    k = weight.shape[-1]
    if weight.dim() != 4 or weight.shape[-2] != k or k % 2 == 0:
        raise ValueError(f"weight must be [heads_out, heads_in/groups, k, k] with k odd, got {tuple(weight.shape)}")
    if weight.shape[1] * groups != scores.shape[1]:
        raise ValueError(f"weight has {weight.shape[1]} input heads per group, scores {scores.shape[1]} heads, "
                         f"groups {groups}")


def causal_mask(seq: int, device="cpu") -> torch.Tensor:
    """Boolean ``[1, 1, seq, seq]``, true on and below the diagonal (key j <= query i)."""
    return torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=device)).view(1, 1, seq, seq)


def future_mask(seq: int, device="cpu") -> torch.Tensor:
    """Boolean ``[1, 1, seq, seq]``, true above the diagonal (key j > query i): what both masks fill."""
    return ~causal_mask(seq, device)


def mask_fill(dtype) -> float:
    """:data:`MASK_FILL` as a tensor of ``dtype`` holds it (-inf in fp16, which cannot hold -1e9), as a Python
    number: what upstream's ``torch.tensor(MASK_FILL, dtype=..., device=...)`` fills with, without its copy
    to the device (and the fill kernel's read of it back to the host)."""
    return torch.tensor(MASK_FILL, dtype=torch_dtype(dtype)).item()


def multi_token_attention_torch(scores: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], *,
                                groups: int = 1, future: Optional[torch.Tensor] = None,
                                fill: Optional[float] = None) -> torch.Tensor:
    """The upstream formulation: mask -1e9, softmax, conv2d (padding k//2), mask 0.

    Returns ``[batch, heads_out, seq, seq]`` in the inputs' dtype. Memory traffic: five
    full passes over ``[batch, heads, seq, seq]`` tensors (mask, softmax, conv, mask).
    ``future`` (:func:`future_mask`) and ``fill`` (:func:`mask_fill`) are built once by a
    prepared pass (:data:`FAMILY`'s constants), so a timed call launches no mask kernels
    and nothing in it waits on the host; without them (the float64 reference) they are
    built here. The results are those of building them on every call.
    """
    _check(scores, weight, groups)
    future = future_mask(scores.shape[-1], scores.device) if future is None else future
    fill = mask_fill(scores.dtype) if fill is None else fill
    filled = scores.masked_fill(future, fill)
    probs = torch.softmax(filled, dim=-1)
    mixed = torch.nn.functional.conv2d(probs, weight, bias, stride=1, padding=weight.shape[-1] // 2, groups=groups)
    return mixed.masked_fill(future, 0.0)


def multi_token_attention_float64(scores: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], *,
                                  groups: int = 1) -> torch.Tensor:
    """The correctness reference: :func:`multi_token_attention_torch` on float64 copies (same device).

    Returns float64; ``torch.autograd.grad`` through it gives float64 reference gradients.
    """
    return multi_token_attention_torch(scores.to(torch.float64), weight.to(torch.float64),
                                       None if bias is None else bias.to(torch.float64), groups=groups)


# ----------------------------------------------------------------------------- floors


def flop_count(values: Mapping, pass_: str = "forward") -> int:
    """Floating-point operations of one call (multiply-add = 2), counting only necessary work.

    Forward: the convolution, ``2 * heads_in/groups * k^2`` per output element over the
    causal half (the rest is masked to zero), plus about 4 per score for the softmax
    (max, subtract, exponential, sum; its divide folded in) over the causal half.
    Backward: the input and weight gradients of the convolution (twice the forward
    convolution) and about 4 per score for the softmax's backward. ``full`` is their sum.
    """
    batch, seq, k = values["batch"], values["seq"], values["k"]
    heads_in, heads_out, groups = values["heads_in"], values["heads_out"], values.get("groups", 1)
    causal = seq * (seq + 1) // 2
    conv = 2 * (heads_in // groups) * k * k * batch * heads_out * causal
    softmax = 4 * batch * heads_in * causal
    forward = conv + softmax
    backward = 2 * conv + softmax
    return {"forward": forward, "backward": backward, "full": forward + backward}[pass_]


def min_bytes(values: Mapping, dtype="bf16", pass_: str = "forward") -> int:
    """Fewest bytes one call must move: each input read once, each output written once (full tensors).

    Forward reads ``scores`` and writes the output; backward reads the output gradient
    and ``scores`` and writes the scores gradient (weights, bias and their gradients are
    a few hundred bytes and counted too). ``full`` reads scores and the output gradient
    and writes the output and the scores gradient.
    """
    size = torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    batch, seq, k = values["batch"], values["seq"], values["k"]
    heads_in, heads_out, groups = values["heads_in"], values["heads_out"], values.get("groups", 1)
    scores = batch * heads_in * seq * seq
    out = batch * heads_out * seq * seq
    params = heads_out * (heads_in // groups) * k * k + (heads_out if values.get("bias", True) else 0)
    forward = scores + out + params
    backward = out + 2 * scores + 2 * params
    full = 2 * scores + 2 * out + 2 * params
    return size * {"forward": forward, "backward": backward, "full": full}[pass_]


# ----------------------------------------------------------------------------- the family, for every target


def prepared_masks(workload) -> dict[str, torch.Tensor | float]:
    """The formulation's constants, built once per prepared pass: the future mask on the workload's device
    and the fill value in the workload's dtype."""
    return {"future": future_mask(workload.parameters["seq"], workload.device), "fill": mask_fill(workload.dtype)}


def output_shape(parameters: Mapping) -> tuple[int, int, int, int]:
    """The forward output's shape, ``[batch, heads_out, seq, seq]`` (and so the upstream gradient's)."""
    return parameters["batch"], parameters["heads_out"], parameters["seq"], parameters["seq"]


FAMILY = Family(
    definition=MULTI_TOKEN_ATTENTION,
    make_inputs=make_workload,
    arguments=("scores", "weight", "bias"),
    keywords=("groups",),
    output_shape=output_shape,
    grad_output_draw_dtype=torch.float32,
    eager=Formulation(multi_token_attention_torch, "mask, softmax, conv2d, mask (upstream module; mask built once)",
                      prepared_masks),
    compiled=Formulation(multi_token_attention_torch, "mask, softmax, conv2d, mask (mask built once)", prepared_masks),
    float64=multi_token_attention_float64,
    flop_count=flop_count,
    min_bytes=min_bytes,
    float64_by_batch_element=("scores", "grad_output"),
)
