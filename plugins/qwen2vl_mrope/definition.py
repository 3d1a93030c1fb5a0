"""The Qwen2-VL M-RoPE family as data (no torch needed).

``q [batch, seq, q_heads, head_dim]`` and ``k [batch, seq, kv_heads, head_dim]``, laid out
as the projections make them (and as upstream allocates them), with ``head_dim = hidden /
q_heads``, are rotated by the position tables ``cos`` and ``sin [3, batch, seq,
head_dim]``: one table per section (time, height, width), each channel taking its own
section's. Upstream's rows (in its cuTile comparison CSV) use RoPE's names
(:mod:`plugins.rope.definition`): ``T`` (seq) at ``hidden_size`` 4096, 32 query and 8
key-value heads and ``bsz`` 1.
"""

from plugins._shapes import shapes
from plugins.rope.definition import ROPE
from runners.types import FamilyDefinition

SECTIONED_TENSORS = shapes(q=("batch", "seq", "q_heads", "head_dim"), k=("batch", "seq", "kv_heads", "head_dim"),
                           cos=(3, "batch", "seq", "head_dim"), sin=(3, "batch", "seq", "head_dim"))


def qwen2vl_mrope_tensors(values, dtype):
    """The query, key and the three sections' position tables, each head ``hidden / q_heads`` wide."""
    return SECTIONED_TENSORS({**values, "head_dim": values["hidden"] // values["q_heads"]}, dtype)


QWEN2VL_MROPE = FamilyDefinition(
    name="qwen2vl_mrope",
    title="Qwen2-VL M-RoPE",
    parameters=ROPE.parameters,
    derive_tensors=qwen2vl_mrope_tensors,
    aliases=ROPE.aliases,
    defaults=ROPE.defaults,
)
