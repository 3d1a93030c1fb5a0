"""The KTO loss family as data (no torch needed).

A policy's hidden states ``input [batch, seq, hidden]`` are projected by its head
``weight [vocab, hidden]`` (and ``bias [vocab]``), a reference model's ``ref_input`` by
``ref_weight`` (and ``ref_bias``); ``target [batch, seq]`` holds each sequence's tokens
(int64, some of them ``ignore_index``), ``preference_labels [batch]`` (bool) marks each
sequence desirable or not, and ``kl [1]`` is a precomputed estimate of the policy's KL
divergence from the reference. Upstream's rows sweep ``B`` (batch) at ``T`` 512, ``H``
1024, ``V`` 128256 in bfloat16, with both biases; ``beta`` and ``ignore_index`` are
options the loss reads, ``bias`` one the tensors read, and ``mode`` (``forward`` on every
row, a leftover of its script) is kept as it is.
"""

from runners.types import FamilyDefinition, TensorSpec


def derive_tensors(values, dtype):
    """The policy's and the reference's tensors, the labels, the KL estimate, and the two biases when ``bias``."""
    batch, seq, hidden, vocab = values["batch"], values["seq"], values["hidden"], values["vocab"]
    tensors = [
        TensorSpec("input", dtype, (batch, seq, hidden)),
        TensorSpec("weight", dtype, (vocab, hidden)),
        TensorSpec("target", "int64", (batch, seq)),
        TensorSpec("preference_labels", "bool", (batch,)),
        TensorSpec("ref_input", dtype, (batch, seq, hidden)),
        TensorSpec("ref_weight", dtype, (vocab, hidden)),
        TensorSpec("kl", dtype, (1,)),
    ]
    if values["bias"]:
        tensors += [TensorSpec("bias", dtype, (vocab,)), TensorSpec("ref_bias", dtype, (vocab,))]
    return tuple(tensors)


KTO_LOSS = FamilyDefinition(
    name="kto_loss",
    title="KTO loss",
    parameters=("batch", "seq", "hidden", "vocab"),
    derive_tensors=derive_tensors,
    aliases={"B": "batch", "bsz": "batch", "T": "seq", "H": "hidden", "hidden_size": "hidden", "V": "vocab",
             "vocab_size": "vocab"},
    defaults={"bias": True},
    option_values={"bias": (True, False)},
)
