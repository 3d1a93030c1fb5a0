"""The group norm family as data (no torch needed).

``input [batch, channels, spatial]`` is normalized over each group of
``channels_per_group`` channels (an option) and all its ``spatial`` positions, then scaled
by ``weight [channels]`` and shifted by ``bias [channels]``; ``eps`` (an option) keeps the
variance away from zero. Upstream's rows sweep ``C`` (channels) at ``M`` (batch) 128 and
``H`` (spatial) 512.
"""

from plugins._shapes import shapes
from runners.types import FamilyDefinition

GROUP_NORM = FamilyDefinition(
    name="group_norm",
    title="GroupNorm",
    parameters=("batch", "channels", "spatial"),
    derive_tensors=shapes(input=("batch", "channels", "spatial"), weight=("channels",), bias=("channels",)),
    aliases={"M": "batch", "C": "channels", "H": "spatial"},
)
