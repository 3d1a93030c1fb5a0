"""The one reference for Llama 4 RoPE, shared by every target and the tests.

Each head of ``x`` (the query or the key) is taken as pairs ``(a, b) = (x[2i], x[2i+1])``,
and pair ``i`` of the token at position ``m`` turns by the angle ``m * theta_i``::

    (a, b) -> (a cos - b sin, a sin + b cos)        (in at least float32, cast back)

the complex product ``(a + ib)(cos + i sin)`` of Hugging Face's Llama 4 ``apply_rotary_emb``
(which upstream's ``huggingface`` rows time, in complex64). The angles are those of Llama
4's rotary embedding at its default base 500000, ``theta_i = 500000^(-2i/d)``; they are
fixed, like a model's, so no pass differentiates them. Memory traffic: q and k read and
written once, the frequencies read once.

Both comparators take ``freqs_cis`` complex, as upstream hands it to them: a view
(``torch.view_as_complex``) of the workload's real pairs, no copy. Liger's kernel rotates
q and k in their own storage, and in its backward the upstream gradient; upstream's timed
calls let it overwrite them, so here it runs on private copies made in setup, outside the
timed call, and the correctness policy still sees every input as drawn.
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, at_least_float32, normal
from plugins.llama4_rope.definition import LLAMA4_ROPE
from plugins.rope.reference import flop_count

ROPE_THETA = 500_000.0
"""Llama 4's rotary base (``rope_theta``), the default of the configuration upstream's newer script builds."""


def frequency_pairs(shape, generator):
    """``(cos, sin)`` of ``m * theta_i`` shaped ``[1, seq, head_dim / 2, 2]``: the same on every seed."""
    _, seq, pairs, _ = shape
    inverse_frequencies = ROPE_THETA ** -(torch.arange(pairs, dtype=torch.float64) / pairs)
    angles = torch.outer(torch.arange(seq, dtype=torch.float64), inverse_frequencies)
    return torch.stack((angles.cos(), angles.sin()), dim=-1).float().unsqueeze(0)


def rotate_pairs(x, freqs_cis):
    """``x [batch, seq, heads, head_dim]`` pair by pair times ``cos + i sin`` from ``freqs_cis [1, seq, pairs, 2]``."""
    a, b = at_least_float32(x).unflatten(-1, (-1, 2)).unbind(-1)
    cos, sin = at_least_float32(freqs_cis).unsqueeze(2).unbind(-1)
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(x.dtype)


def llama4_rope(q, k, freqs_cis):
    """The rotated query and key."""
    return rotate_pairs(q, freqs_cis), rotate_pairs(k, freqs_cis)


def with_complex_frequencies(function):
    """``function`` given ``freqs_cis`` as upstream hands it, complex: a view of the workload's real pairs."""
    def call(q, k, freqs_cis):
        return function(q, k, torch.view_as_complex(freqs_cis))
    return call


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    function="transformers.models.llama4.modeling_llama4:apply_rotary_emb",
    adapter=with_complex_frequencies,
)

LIGER = FunctionComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.llama4_rope:liger_llama4_text_rotary_pos_emb",
    targets=("cuda",),
    adapter=with_complex_frequencies,
    in_place=True,
)

FAMILY = FormulatedFamily(
    definition=LLAMA4_ROPE,
    formulation=llama4_rope,
    description="float32 (a cos - b sin, a sin + b cos) for each channel pair of q and k, cast back "
                "(Llama 4's apply_rotary_emb)",
    inputs={"q": normal(), "k": normal(), "freqs_cis": frequency_pairs},
    # as RoPE's: three per element of q and k each way (a complex product is four products and two sums per pair)
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER),
    outputs=("output_q", "output_k"),
    no_grad_inputs=("freqs_cis",),
)
