"""The sparsemax family as data (no torch needed).

``input [batch * seq, hidden]`` is projected row by row along ``dim`` (an option, -1 upstream).
Upstream's rows sweep ``V`` (hidden, its "feature size") at ``B`` 4 and ``T`` 512 and, like
upstream, the input is the matrix of their ``batch * seq`` rows.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    return (TensorSpec("input", dtype, (values["batch"] * values["seq"], values["hidden"])),)


SPARSEMAX = FamilyDefinition(
    name="sparsemax",
    title="Sparsemax",
    parameters=("batch", "seq", "hidden"),
    derive_tensors=derive_tensors,
    aliases={"B": "batch", "T": "seq", "V": "hidden", "hidden_size": "hidden"},
    defaults={"dim": -1},
)
