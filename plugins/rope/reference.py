"""The one reference for RoPE, shared by every target and the tests.

For ``x`` (the query or the key) and the position tables ``cos``, ``sin``, per head::

    rotate_half(x) = cat(-x[..., d/2:], x[..., :d/2])
    out            = x * cos + rotate_half(x) * sin          (in at least float32, cast back)

This is Hugging Face's Llama ``apply_rotary_pos_emb`` (which upstream's ``huggingface``
rows time; it multiplies in the inputs' dtype). The tables are those of Llama's rotary
embedding at its default base 10000: ``cos(m * theta_i)`` and ``sin(m * theta_i)`` at
position ``m``, with each frequency twice (``theta_i = 10000^(-2i/d)`` for both halves),
which Liger's kernel relies on (it reads the first half only). They are fixed, like a
model's, so no pass differentiates them. Memory traffic: q and k read and written once,
the tables read once.

Upstream hands both libraries q and k as ``transpose(1, 2)`` views of ``[batch, seq, heads,
head_dim]`` storage; so does this family (:func:`seq_major`). On such views Liger's kernel
rotates q and k in their own storage, and in its backward the upstream gradient, with no
copy (handed contiguous heads-first tensors, its function copies both and their gradients
to that layout first, which upstream's times do not include). Upstream's timed calls let it
overwrite them; here it runs on private copies made in setup, outside the timed call, since
the correctness policy rejects an output in an input's storage.
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, at_least_float32, by_pass, normal
from plugins.rope.definition import ROPE

ROPE_BASE = 10_000.0
"""Llama's rotary base (``rope_theta``), the default of the rotary embedding upstream builds."""


def rotary_table(angle_function):
    """A draw of ``angle_function(m * theta_i)`` shaped ``[..., seq, head_dim]``: the same on every seed."""
    def draw(shape, generator):
        seq, head_dim = shape[-2:]
        inverse_frequencies = ROPE_BASE ** -(torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.outer(torch.arange(seq, dtype=torch.float64), inverse_frequencies)
        return angle_function(torch.cat((angles, angles), dim=-1)).float().expand(shape).contiguous()
    return draw


def seq_major(draw):
    """``draw`` of ``[batch, seq, heads, head_dim]`` storage, as its ``[batch, heads, seq, head_dim]`` view: the
    layout upstream allocates q and k in. Only the storage differs from a heads-first draw, not the workload's
    tensors (whose shapes identify it)."""
    def heads_first_view(shape, generator):
        batch, heads, seq, head_dim = shape
        return draw((batch, seq, heads, head_dim), generator).transpose(1, 2)
    return heads_first_view


def rotate(x, cos, sin):
    """``x * cos + rotate_half(x) * sin`` for ``x [batch, heads, seq, head_dim]`` and tables ``[1 or batch, seq,
    head_dim]``."""
    wide = at_least_float32(x)
    first, second = wide.chunk(2, dim=-1)
    cos, sin = at_least_float32(cos).unsqueeze(1), at_least_float32(sin).unsqueeze(1)
    return (wide * cos + torch.cat((-second, first), dim=-1) * sin).to(x.dtype)


def rope(q, k, cos, sin):
    """The rotated query and key."""
    return rotate(q, cos, sin), rotate(k, cos, sin)


def flop_count(values, pass_):
    """Three per element of q and k each way (two products and a sum; the backward rotates by ``-sin``)."""
    head_dim = values["hidden"] // values["q_heads"]
    elements = values["batch"] * values["seq"] * (values["q_heads"] + values["kv_heads"]) * head_dim
    return by_pass(3 * elements, 3 * elements, pass_)


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    function="transformers.models.llama.modeling_llama:apply_rotary_pos_emb",
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.rope:liger_rotary_pos_emb",
    targets=("cuda",),
    in_place=True,
)

FAMILY = FormulatedFamily(
    definition=ROPE,
    formulation=rope,
    description="float32 x * cos + rotate_half(x) * sin for q and k, cast back (Llama's apply_rotary_pos_emb)",
    inputs={"q": seq_major(normal()), "k": seq_major(normal()), "cos": rotary_table(torch.cos),
            "sin": rotary_table(torch.sin)},
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
    outputs=("output_q", "output_k"),
    no_grad_inputs=("cos", "sin"),
)
