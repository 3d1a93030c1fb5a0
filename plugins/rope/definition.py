"""The RoPE family as data (no torch needed).

``q [batch, q_heads, seq, head_dim]`` and ``k [batch, kv_heads, seq, head_dim]`` (views of
``[batch, seq, heads, head_dim]`` storage, as the projections make them) are rotated by the
position tables ``cos`` and ``sin [1, seq, head_dim]``, with ``head_dim = hidden / q_heads``.
Upstream's rows sweep ``H`` (hidden) at ``seq_len`` 2048 or ``T`` (seq) at ``hidden_size``
8192, with 32 query and 8 key-value heads and no batch (1); its newer scripts say
``num_attention_heads``, ``num_key_value_heads`` and ``bsz``.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

ROTARY_TENSORS = shapes(q=("batch", "q_heads", "seq", "head_dim"), k=("batch", "kv_heads", "seq", "head_dim"),
                        cos=(1, "seq", "head_dim"), sin=(1, "seq", "head_dim"))


def rope_tensors(values, dtype):
    """The query, key and position tables, each head ``hidden / q_heads`` wide."""
    return ROTARY_TENSORS({**values, "head_dim": values["hidden"] // values["q_heads"]}, dtype)


ROPE = FamilyDefinition(
    name="rope",
    title="RoPE",
    parameters=("batch", "seq", "hidden", "q_heads", "kv_heads"),
    derive_tensors=rope_tensors,
    aliases={"bsz": "batch", "T": "seq", "seq_len": "seq", "H": "hidden", "hidden_size": "hidden",
             "num_q_heads": "q_heads", "num_attention_heads": "q_heads", "num_kv_heads": "kv_heads",
             "num_key_value_heads": "kv_heads"},
    defaults={"batch": 1},
)
