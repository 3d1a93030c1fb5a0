"""The Llama 4 RoPE family as data (no torch needed).

``q [batch, seq, q_heads, head_dim]`` and ``k [batch, seq, kv_heads, head_dim]``, laid out
as the projections make them (and as upstream allocates them), with ``head_dim = hidden /
q_heads``, are rotated pair by pair by ``freqs_cis [1, seq, head_dim / 2, 2]``: Llama 4's
complex frequencies as real (cos, sin) pairs, ``torch.view_as_real`` of the complex64
``freqs_cis`` its rotary embedding makes, so float32 whatever the workload's dtype.
Upstream's rows use RoPE's names (:mod:`plugins.rope.definition`): ``H`` at ``seq_len``
2048 or ``T`` at ``hidden_size`` 8192, 32 query and 8 key-value heads; its cuTile
comparison rows ``T`` at ``hidden_size`` 4096 and ``bsz`` 1.
"""

from plugins._shapes import shapes
from plugins.rope.definition import ROPE
from runners.types import FamilyDefinition

FREQUENCY_DTYPE = "fp32"
"""The dtype of ``freqs_cis``'s real pairs: complex64's parts, as Llama 4 keeps them beside bf16 activations."""

PAIRED_TENSORS = shapes(q=("batch", "seq", "q_heads", "head_dim"), k=("batch", "seq", "kv_heads", "head_dim"),
                        freqs_cis=(1, "seq", "pairs", 2), dtypes={"freqs_cis": FREQUENCY_DTYPE})


def llama4_rope_tensors(values, dtype):
    """The query, key and frequencies, each head ``hidden / q_heads`` wide: ``head_dim / 2`` pairs."""
    head_dim = values["hidden"] // values["q_heads"]
    return PAIRED_TENSORS({**values, "head_dim": head_dim, "pairs": head_dim // 2}, dtype)


LLAMA4_ROPE = FamilyDefinition(
    name="llama4_rope",
    title="Llama 4 RoPE",
    parameters=ROPE.parameters,
    derive_tensors=llama4_rope_tensors,
    aliases=ROPE.aliases,
    defaults=ROPE.defaults,
)
