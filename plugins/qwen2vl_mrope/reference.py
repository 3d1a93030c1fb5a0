"""The one reference for Qwen2-VL M-RoPE, shared by every target and the tests.

Multimodal RoPE gives each token three positions (time, height, width) and splits each
half of a head's channels into three sections, ``mrope_section(head_dim)`` wide. A channel
``c`` takes its angles from the table of its section, then turns as in RoPE
(:func:`plugins.rope.reference.rotate`)::

    cos'[..., c] = cos[section(c), ..., c]        (and sin' likewise)
    out          = x * cos' + rotate_half(x) * sin'        (in at least float32, cast back)

Hugging Face's Qwen2-VL ``apply_multimodal_rotary_pos_emb`` (which upstream's
``huggingface`` rows time; it multiplies in the inputs' dtype). The sections are those
upstream's script derives from the head width: ``3 * head_dim / 16`` channels each for
height and width, the rest of the half for time (16, 24, 24 for Qwen2-VL's 128). The
tables are Qwen2-VL's rotary embedding at its base 1000000 in the workload's dtype, at the
positions upstream gives the token at ``m``: ``m``, ``seq + m`` and ``2 seq + m``. They are
fixed, like a model's, so no pass differentiates them. Memory traffic: q and k read and
written once, and of each table the third its sections select (:func:`byte_count`).

Upstream hands both functions ``transpose(1, 2)`` views, ``[batch, heads, seq,
head_dim]``, of its ``[batch, seq, heads, head_dim]`` q and k; so does this family
(:func:`on_heads_first_views`), viewing their outputs back. On such views Liger's kernel
rotates q and k in their own storage, and in its backward the upstream gradient;
upstream's timed calls let it overwrite them, so here it runs on private copies made in
setup, outside the timed call. Upstream's ``liger_cutile`` rows time the same function
with Liger's cuTile kernels, which ``LIGER_KERNEL_IMPL=cutile`` swaps in for the whole
process when Liger is imported: not rerun here, beside the Triton ones.
"""

import torch

from plugins._formulated import FormulatedFamily, FunctionComparator, element_size, normal
from plugins.qwen2vl_mrope.definition import QWEN2VL_MROPE
from plugins.rope.reference import flop_count, rotate

MROPE_THETA = 1_000_000.0
"""Qwen2-VL's rotary base (``rope_theta``), as upstream's script configures its rotary embedding."""


def mrope_section(head_dim):
    """The channels of time, height and width in each half of a head, as upstream derives them."""
    spatial = head_dim * 3 // 16
    return [head_dim // 2 - 2 * spatial, spatial, spatial]


def section_table(angle_function):
    """A draw of ``angle_function(p * theta_i)`` shaped ``[3, batch, seq, head_dim]``, section ``s`` of the token at
    ``m`` at position ``p = s * seq + m``, each frequency twice (both halves): the same on every seed."""
    def draw(shape, generator):
        sections, _, seq, head_dim = shape
        inverse_frequencies = MROPE_THETA ** -(torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.outer(torch.arange(sections * seq, dtype=torch.float64), inverse_frequencies)
        angles = angles.view(sections, 1, seq, -1)
        return angle_function(torch.cat((angles, angles), dim=-1)).float().expand(shape).contiguous()
    return draw


def sectioned(table, sections):
    """``[batch, seq, head_dim]`` from ``table [3, batch, seq, head_dim]``: each channel from its section's table."""
    chunks = table.split([*sections, *sections], dim=-1)
    return torch.cat([chunk[index % 3] for index, chunk in enumerate(chunks)], dim=-1)


def qwen2vl_mrope(q, k, cos, sin):
    """The rotated query and key: RoPE's rotation of heads-first views by the sectioned tables, viewed back."""
    sections = mrope_section(q.shape[-1])
    cos, sin = sectioned(cos, sections), sectioned(sin, sections)
    return tuple(rotate(x.transpose(1, 2), cos, sin).transpose(1, 2) for x in (q, k))


def byte_count(values, dtype, pass_):
    """Every formulated family's least bytes (inputs read; outputs, upstream gradient and gradients once each),
    but of each table only the third its sections select."""
    head_dim = values["hidden"] // values["q_heads"]
    rotated = values["batch"] * values["seq"] * (values["q_heads"] + values["kv_heads"]) * head_dim
    inputs = rotated + 2 * values["batch"] * values["seq"] * head_dim
    return element_size(dtype) * {"forward": inputs + rotated, "backward": inputs + 2 * rotated,
                                  "full": inputs + 3 * rotated}[pass_]


def on_heads_first_views(function):
    """``function`` called as upstream calls it, on ``[batch, heads, seq, head_dim]`` views of q and k, its outputs
    viewed back to the workload's layout: no copies."""
    def call(q, k, cos, sin, **keywords):
        rotated = function(q.transpose(1, 2), k.transpose(1, 2), cos, sin, **keywords)
        return tuple(x.transpose(1, 2) for x in rotated)
    return call


def sections_keyword(values):
    return {"mrope_section": mrope_section(values["hidden"] // values["q_heads"])}


HUGGINGFACE = FunctionComparator(
    name="huggingface", project="Hugging Face Transformers", distribution="transformers",
    function="transformers.models.qwen2_vl.modeling_qwen2_vl:apply_multimodal_rotary_pos_emb",
    keywords=sections_keyword,
    adapter=on_heads_first_views,
)

LIGER_TRITON = FunctionComparator(
    name="liger_triton", project="Liger-Kernel", distribution="liger-kernel",
    function="liger_kernel.transformers.qwen2vl_mrope:liger_multimodal_rotary_pos_emb",
    keywords=sections_keyword,
    targets=("cuda",),
    adapter=on_heads_first_views,
    in_place=True,
)

FAMILY = FormulatedFamily(
    definition=QWEN2VL_MROPE,
    formulation=qwen2vl_mrope,
    description="float32 x * cos + rotate_half(x) * sin for q and k, each channel's tables from its section, "
                "cast back (Qwen2-VL's apply_multimodal_rotary_pos_emb)",
    inputs={"q": normal(), "k": normal(), "cos": section_table(torch.cos), "sin": section_table(torch.sin)},
    # as RoPE's: three per element of q and k each way; choosing a section's table is no arithmetic
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER_TRITON),
    byte_count=byte_count,
    outputs=("output_q", "output_k"),
    no_grad_inputs=("cos", "sin"),
)
