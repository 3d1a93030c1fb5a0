"""The cross entropy family as data (no torch needed).

``input [tokens, vocab]`` are logits, ``target [tokens]`` (int64, below ``vocab``) the
right token of each row. Upstream's rows sweep ``V`` (vocab) at ``B`` 8 and ``T`` 2048
(tokens = B × T) in float32, the dtype its script's ``torch.randn`` allocates; its newer
scripts sweep ``BT`` at ``vocab_size``, or models by name (``model_config``, kept as an
option) at ``bsz`` and ``seq_len``, the vocabulary being the model's.
"""

from plugins._shapes import product_of, shapes
from runners.types import FamilyDefinition

MODEL_VOCABULARIES = {"llama_2_7b": 32000, "llama_3_8b": 128256, "qwen2.5_7b": 152064, "qwen2.5_14b": 152064,
                      "qwen2.5_72b": 152064, "deepseek_v2_lite": 102400, "deepseek_v3": 129280}
"""The vocabulary of each model upstream's model-config sweeps name (its ``benchmark_model_configs.py``)."""

tokens_of_batch_and_seq = product_of("tokens", "batch", "seq")


def implied(values):
    """Tokens from ``B`` × ``T``; the vocabulary of a named model."""
    vocabulary = MODEL_VOCABULARIES.get(values.get("model_config"))
    return {**tokens_of_batch_and_seq(values), **({"vocab": vocabulary} if vocabulary else {})}


CROSS_ENTROPY = FamilyDefinition(
    name="cross_entropy",
    title="Cross-entropy",
    parameters=("tokens", "vocab"),
    derive_tensors=shapes(input=("tokens", "vocab"), target=("tokens",), dtypes={"target": "int64"}),
    aliases={"BT": "tokens", "V": "vocab", "vocab_size": "vocab", "B": "batch", "bsz": "batch", "T": "seq",
             "seq_len": "seq"},
    implied=implied,
    default_dtype="fp32",
)
