"""The one reference for fused neighborhood attention, shared by every target and the tests.

The layer: ``heads`` heads over ``hidden_states [batch, seq, hidden]``::

    q, k, v = x Wq^T + bq, x Wk^T + bk, x Wv^T + bv           (split into heads of hidden/heads)
    for each position i and head h, its neighbors are
        N(i) = { j : |j - i| <= (kernel_size // 2) * dilation  and  (j - i) % dilation == 0,
                 0 <= j < seq }
    a[i] = softmax_{j in N(i)} (q_i . k_j * scale) . v_j       scale = 1 / sqrt(hidden / heads)
    out  = a Wo^T + bo

Near the ends of the sequence a position simply has fewer neighbors (the window is cut,
not shifted). The relation is symmetric: i is a neighbor of j exactly when j is one of i.

Three formulations live here:

* :func:`fused_neighborhood_attention_torch`: the upstream benchmark's plain-torch module
  written as a function, with the same structure: dense ``[seq, seq]`` scores, a boolean
  neighborhood mask built element by element in a Python loop (on a GPU each element is
  a tiny host-to-device copy, which makes it host-bound, exactly as upstream), -inf fill,
  softmax, ``P @ V``, out projection. This is the ``torch`` implementation.
* :func:`fused_neighborhood_attention_gather`: the same function computed by gathering
  the ``kernel_size`` neighbor rows of K and V (O(seq * kernel_size) memory, no host
  loop). Used for ``torch_compile`` and, in float64, as the correctness reference.
* :func:`fused_neighborhood_attention_float64`: the gather formulation on inputs upcast
  to float64 (on their device), returned in float64.

Tensor names follow ``definition.py``: ``hidden_states``, ``{q,k,v,out}_weight`` and
``{q,k,v,out}_bias`` (biases may be ``None`` when the workload's ``bias`` option is off).
:data:`FAMILY` binds the formulations, with the inputs and the cost, for every target
(:mod:`plugins._family`).
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

import torch

from plugins._family import Family, Formulation
from plugins.fused_neighborhood_attention.definition import FUSED_NEIGHBORHOOD_ATTENTION

PROJECTIONS = ("q", "k", "v", "out")

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp64": torch.float64}


def torch_dtype(dtype) -> torch.dtype:
    """``torch.float32`` for ``"fp32"`` (``bf16``, ``fp16``, ``fp64`` likewise); torch dtypes pass through."""
    return DTYPES[dtype] if isinstance(dtype, str) else dtype


# ----------------------------------------------------------------------------- inputs


def make_parameters(hidden: int, *, bias: bool = True, dtype=torch.float32, device="cpu",
                    generator: Optional[torch.Generator] = None) -> dict[str, Optional[torch.Tensor]]:
    """The four projections' weights ``[hidden, hidden]`` and biases ``[hidden]``.

    Drawn like ``torch.nn.Linear``'s default initialisation (the upstream benchmark builds
    its layers with it): uniform in ``±1/sqrt(hidden)`` for weights and biases. Drawn on the
    CPU from ``generator`` so the values do not depend on the device, then moved.
    Biases are ``None`` when ``bias`` is false.
    """
    bound = 1.0 / math.sqrt(hidden)
    params: dict[str, Optional[torch.Tensor]] = {}
    for name in PROJECTIONS:
        weight = (torch.rand(hidden, hidden, generator=generator, dtype=torch.float64) * 2 - 1) * bound
        params[f"{name}_weight"] = weight.to(device=device, dtype=torch_dtype(dtype))
        if bias:
            b = (torch.rand(hidden, generator=generator, dtype=torch.float64) * 2 - 1) * bound
            params[f"{name}_bias"] = b.to(device=device, dtype=torch_dtype(dtype))
        else:
            params[f"{name}_bias"] = None
    return params


def make_workload(values: Mapping, dtype="fp32", device="cpu", seed: int = 0) -> dict[str, Optional[torch.Tensor]]:
    """All tensors of one workload, keyed by their ``TensorSpec`` names, deterministic in ``seed``.

    ``values`` holds ``batch``, ``seq``, ``hidden`` (and optionally ``bias``, default true).
    ``hidden_states`` is standard normal, like upstream's ``torch.randn``.
    """
    generator = torch.Generator().manual_seed(seed)
    batch, seq, hidden = values["batch"], values["seq"], values["hidden"]
    tensors: dict[str, Optional[torch.Tensor]] = {
        "hidden_states": torch.randn(batch, seq, hidden, generator=generator, dtype=torch.float64)
        .to(device=device, dtype=torch_dtype(dtype))
    }
    tensors.update(make_parameters(hidden, bias=values.get("bias", True), dtype=dtype, device=device,
                                   generator=generator))
    return tensors


# ----------------------------------------------------------------------------- neighborhoods


def neighborhood_mask(seq: int, kernel_size: int, dilation: int, device="cpu") -> torch.Tensor:
    """Boolean ``[seq, seq]``: ``mask[i, j]`` is true when j is in i's neighborhood.

    Built exactly as the upstream module builds it: a Python loop that sets one element
    at a time on ``device`` (host-bound on a GPU). Use :func:`neighbor_offsets` for speed.
    """
    mask = torch.zeros(seq, seq, device=device, dtype=torch.bool)
    half = kernel_size // 2
    for i in range(seq):
        start = max(0, i - half * dilation)
        stop = min(seq, i + half * dilation + 1)
        for j in range(start, stop):
            if dilation == 1 or (j - i) % dilation == 0:
                mask[i, j] = True
    return mask


def neighbor_offsets(kernel_size: int, dilation: int) -> list[int]:
    """The ``kernel_size`` offsets ``j - i`` of a neighborhood: ``(t - kernel_size // 2) * dilation``."""
    half = kernel_size // 2
    return [(t - half) * dilation for t in range(kernel_size)]


def neighbor_index(seq: int, kernel_size: int, dilation: int, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """``[seq, kernel_size]`` neighbor positions (clamped into the sequence) and whether each is inside it."""
    offsets = torch.tensor(neighbor_offsets(kernel_size, dilation), device=device)
    index = torch.arange(seq, device=device)[:, None] + offsets[None, :]
    return index.clamp(0, seq - 1), (index >= 0) & (index < seq)


def _check(hidden_states: torch.Tensor, heads: int, kernel_size: int, dilation: int) -> None:
    if hidden_states.dim() != 3:
        raise ValueError(f"hidden_states must be [batch, seq, hidden], got {tuple(hidden_states.shape)}")
    if hidden_states.shape[-1] % heads:
        raise ValueError(f"hidden ({hidden_states.shape[-1]}) must be divisible by heads ({heads})")
    if kernel_size <= 0 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size ({kernel_size}) must be positive and odd")
    if dilation < 1:
        raise ValueError(f"dilation ({dilation}) must be positive")


# ----------------------------------------------------------------------------- formulations


def fused_neighborhood_attention_torch(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias,
                                       out_weight, out_bias, *, heads: int, kernel_size: int, dilation: int,
                                       scale: Optional[float] = None) -> torch.Tensor:
    """The upstream plain-torch formulation: dense masked attention. Returns ``[batch, seq, hidden]``.

    Memory: ``batch * heads * seq^2`` scores (quadratic); the mask is built by the host loop
    of :func:`neighborhood_mask` on every call, as upstream does.
    """
    _check(hidden_states, heads, kernel_size, dilation)
    batch, seq, hidden = hidden_states.shape
    head_dim = hidden // heads
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale

    def split(t):  # [batch, seq, hidden] -> [batch, heads, seq, head_dim]
        return t.view(batch, seq, heads, head_dim).transpose(1, 2)

    query = split(torch.nn.functional.linear(hidden_states, q_weight, q_bias))
    key = split(torch.nn.functional.linear(hidden_states, k_weight, k_bias))
    value = split(torch.nn.functional.linear(hidden_states, v_weight, v_bias))

    scores = torch.matmul(query, key.transpose(-2, -1)) * scale
    mask = neighborhood_mask(seq, kernel_size, dilation, hidden_states.device)
    scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    attended = torch.matmul(weights, value).transpose(1, 2).contiguous().view(batch, seq, hidden)
    return torch.nn.functional.linear(attended, out_weight, out_bias)


def fused_neighborhood_attention_gather(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias,
                                        out_weight, out_bias, *, heads: int, kernel_size: int, dilation: int,
                                        scale: Optional[float] = None,
                                        neighbors: Optional[tuple[torch.Tensor, torch.Tensor]] = None) -> torch.Tensor:
    """The same function by gathering each position's ``kernel_size`` neighbor rows.

    Out-of-range neighbors get a -inf score (zero weight), which is the dense version's
    mask. Memory ``O(batch * seq * kernel_size * hidden)``; no host loop, so it compiles
    well under ``torch.compile``. Computes in the inputs' dtype. ``neighbors`` is
    :func:`neighbor_index`, built once by a prepared pass (:data:`FAMILY`'s constants, so
    no timed call copies the offsets from the host); without it (the float64 reference)
    it is built here.
    """
    _check(hidden_states, heads, kernel_size, dilation)
    batch, seq, hidden = hidden_states.shape
    head_dim = hidden // heads
    scale = 1.0 / math.sqrt(head_dim) if scale is None else scale
    device = hidden_states.device

    def split(t):  # [batch, seq, hidden] -> [batch, heads, seq, head_dim]
        return t.view(batch, seq, heads, head_dim).transpose(1, 2)

    query = split(torch.nn.functional.linear(hidden_states, q_weight, q_bias))
    key = split(torch.nn.functional.linear(hidden_states, k_weight, k_bias))
    value = split(torch.nn.functional.linear(hidden_states, v_weight, v_bias))

    index, valid = neighbor_index(seq, kernel_size, dilation, device) if neighbors is None else neighbors
    key_n = key[:, :, index]                                                         # [b, h, seq, kernel, d]
    value_n = value[:, :, index]
    scores = (query.unsqueeze(-2) * key_n).sum(-1) * scale                           # [b, h, seq, kernel]
    scores = scores.masked_fill(~valid, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    attended = (weights.unsqueeze(-1) * value_n).sum(-2)                             # [b, h, seq, d]
    attended = attended.transpose(1, 2).contiguous().view(batch, seq, hidden)
    return torch.nn.functional.linear(attended, out_weight, out_bias)


def fused_neighborhood_attention_float64(hidden_states, q_weight, q_bias, k_weight, k_bias, v_weight, v_bias,
                                         out_weight, out_bias, *, heads: int, kernel_size: int, dilation: int,
                                         scale: Optional[float] = None) -> torch.Tensor:
    """The correctness reference: the gather formulation on float64 copies, on the inputs' device.

    Returns float64 ``[batch, seq, hidden]``. Gradients flow back to the inputs (through
    the upcast), so ``torch.autograd.grad`` gives float64-accurate reference gradients.
    """
    def up(t):
        return None if t is None else t.to(torch.float64)

    return fused_neighborhood_attention_gather(
        up(hidden_states), up(q_weight), up(q_bias), up(k_weight), up(k_bias), up(v_weight), up(v_bias),
        up(out_weight), up(out_bias), heads=heads, kernel_size=kernel_size, dilation=dilation, scale=scale)


# ----------------------------------------------------------------------------- floors


def flop_count(values: Mapping, pass_: str = "forward") -> int:
    """Floating-point operations of one call (multiply-add = 2), counting only necessary work.

    Forward: four ``[batch*seq, hidden] x [hidden, hidden]`` projections, ``2*M*H^2`` each,
    plus the neighborhood part: per position and head ``2*kernel*head_dim`` for the
    scores and as much for the weighted sum (softmax's few ops per score neglected).
    Backward: each projection costs two such products (input and weight gradients), the
    neighborhood part about twice its forward. ``full`` is their sum.
    """
    m = values["batch"] * values["seq"]
    hidden, kernel = values["hidden"], values["kernel_size"]
    gemm = 2 * m * hidden * hidden
    local = 4 * m * hidden * kernel
    forward = 4 * gemm + local
    backward = 8 * gemm + 2 * local
    return {"forward": forward, "backward": backward, "full": forward + backward}[pass_]


def min_bytes(values: Mapping, dtype="fp32", pass_: str = "forward") -> int:
    """Fewest bytes one call must move through device memory: each input read once, each output written once.

    Forward reads ``hidden_states`` and the weights and biases, writes the output.
    Backward reads the output gradient, ``hidden_states`` and the weights, writes the
    input gradient and the weight and bias gradients. ``full`` reads and writes the
    union (``hidden_states``, weights, output gradient in; output, all gradients out).
    """
    size = torch.tensor([], dtype=torch_dtype(dtype)).element_size()
    m = values["batch"] * values["seq"]
    hidden = values["hidden"]
    activation = m * hidden
    params = 4 * hidden * hidden + (4 * hidden if values.get("bias", True) else 0)
    forward = 2 * activation + params
    backward = 3 * activation + 2 * params
    full = 4 * activation + 2 * params
    return size * {"forward": forward, "backward": backward, "full": full}[pass_]


# ----------------------------------------------------------------------------- the family, for every target


def prepared_neighbors(workload) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The gather formulation's constant, built once per prepared pass: its neighbor index on the workload's device."""
    parameters = workload.parameters
    return {"neighbors": neighbor_index(parameters["seq"], parameters["kernel_size"], parameters["dilation"],
                                        workload.device)}


def output_shape(parameters: Mapping) -> tuple[int, int, int]:
    """The forward output's shape, ``[batch, seq, hidden]`` (and so the upstream gradient's)."""
    return parameters["batch"], parameters["seq"], parameters["hidden"]


FAMILY = Family(
    definition=FUSED_NEIGHBORHOOD_ATTENTION,
    make_inputs=make_workload,
    arguments=("hidden_states", "q_weight", "q_bias", "k_weight", "k_bias", "v_weight", "v_bias",
               "out_weight", "out_bias"),
    keywords=("heads", "kernel_size", "dilation"),
    output_shape=output_shape,
    grad_output_draw_dtype=torch.float64,
    eager=Formulation(fused_neighborhood_attention_torch,
                      "dense masked attention with the mask built by a host loop (upstream module)"),
    compiled=Formulation(fused_neighborhood_attention_gather, "neighbor gather (neighbor index built once)",
                         prepared_neighbors),
    float64=fused_neighborhood_attention_float64,
    flop_count=flop_count,
    min_bytes=min_bytes,
)
