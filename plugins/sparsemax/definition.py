"""The sparsemax family as data (no torch needed).

``input [batch * seq, hidden]`` is projected row by row along ``dim`` (an option, -1 upstream).
Upstream's rows sweep ``V`` (hidden, its "feature size") at ``B`` 4 and ``T`` 512 and, like
upstream, the input is the matrix of their ``batch * seq`` rows. Its newer rows (the cuTile comparison) sweep those
rows, ``BT``, at ``bsz`` 1, so they are ``seq``; their ``seq_len``, the tokens of its model sweep that they do not use,
stays an option under its own name.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    return (TensorSpec("input", dtype, (values["batch"] * values["seq"], values["hidden"])),)


SPARSEMAX = FamilyDefinition(
    name="sparsemax",
    title="Sparsemax",
    parameters=("batch", "seq", "hidden"),
    derive_tensors=derive_tensors,
    aliases={"B": "batch", "T": "seq", "BT": "seq", "V": "hidden", "hidden_size": "hidden"},
    defaults={"dim": -1},
    # The gradient jumps where an entry ties the threshold; on TF32's grid that happens in about one row of 3,000
    # (32,768 wide), which fails honest fp32 arithmetic. Sparsemax multiplies nothing, so TF32 has nothing to change.
    constrained_inputs=("input",),
)
