"""The group norm family as data (no torch needed).

``input [batch, channels, spatial]`` is normalized over each group of
``channels_per_group`` channels (an option) and all its ``spatial`` positions, then scaled
by ``weight [channels]`` and shifted by ``bias [channels]``; ``eps`` (an option) keeps the
variance away from zero. Upstream's rows sweep ``C`` (channels) at ``M`` (batch) 128 and
``H`` (spatial) 512; its newer rows (the cuTile comparison) sweep ``BT`` (``tokens``, an
option) at ``hidden_size`` (channels) 4096, and ``batch`` is ``BT / H`` as upstream's script
computes it. Their ``bsz`` and ``seq_len`` (leftovers of a model sweep that these rows do not
use) stay options under their own names.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

GROUP_NORM = FamilyDefinition(
    name="group_norm",
    title="GroupNorm",
    parameters=("batch", "channels", "spatial"),
    derive_tensors=shapes(input=("batch", "channels", "spatial"), weight=("channels",), bias=("channels",)),
    aliases={"M": "batch", "C": "channels", "H": "spatial", "hidden_size": "channels", "BT": "tokens",
             "bsz": "bsz", "seq_len": "seq_len"},
    implied=lambda values: {"batch": max(1, values["tokens"] // values["spatial"])} if "tokens" in values else {},
)
