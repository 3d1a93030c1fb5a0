"""The Megatron RMSNorm family as data (no torch needed).

RMS norm (:mod:`plugins.rms_norm.definition`) on ``input [seq, batch, hidden]``, Megatron's
layout, scaled by ``weight [hidden]``; ``eps`` is an option, upstream's 1e-6 when a
workload names none. Upstream's rows sweep ``H`` (hidden) at ``S`` (seq) 4096 and ``B``
(batch) 1, in bf16 without saying so.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

MEGATRON_RMS_NORM = FamilyDefinition(
    name="megatron_rms_norm",
    title="Megatron RMSNorm",
    parameters=("seq", "batch", "hidden"),
    derive_tensors=shapes(input=("seq", "batch", "hidden"), weight=("hidden",)),
    aliases={"S": "seq", "B": "batch", "H": "hidden"},
    default_dtype="bf16",
)
