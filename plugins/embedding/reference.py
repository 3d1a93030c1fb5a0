"""The one reference for embedding, shared by every target and the tests.

For ``indices [batch, seq]`` and ``weight [vocab, hidden]``::

    out[b, t]          = weight[indices[b, t]]                 (a gather: no arithmetic)
    grad_weight[v]     = sum of dy[b, t] over every (b, t) with indices[b, t] = v   (zero elsewhere)

``torch.nn.functional.embedding``, what ``torch.nn.Embedding`` calls. Upstream's
``huggingface`` rows time ``torch.nn.Embedding`` itself (the layer Hugging Face models embed
tokens with), so that comparator is torch's module, not a transformers class.

Memory traffic at its least: the forward reads the indices, the distinct rows they name
(of uniform indices, ``vocab * (1 - (1 - 1/vocab)^tokens)`` expected) and writes the output;
the backward reads the indices and the upstream gradient and writes the whole, dense,
weight gradient; the full pass does both, reading the indices once.
"""

import math

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator, by_pass, element_size, indices_below, normal
from plugins.embedding.definition import EMBEDDING

INDEX_BYTES = 8
"""int64 indices, as torch.nn.Embedding takes them."""


def embedding(indices, weight):
    """``weight[indices]`` by ``torch.nn.functional.embedding``."""
    return torch.nn.functional.embedding(indices, weight)


def flop_count(values, pass_):
    """Forward none (a gather); backward one add per element of the upstream gradient, accumulated into its row."""
    return by_pass(0, values["batch"] * values["seq"] * values["hidden"], pass_)


def expected_rows_read(vocab: int, tokens: int) -> int:
    """The distinct rows ``tokens`` uniform indices below ``vocab`` name, in expectation."""
    if vocab == 1:
        return 1
    return round(-vocab * math.expm1(tokens * math.log1p(-1 / vocab)))


def byte_count(values, dtype, pass_):
    """The indices once; the rows they name (forward); the output or upstream gradient per pass; the dense weight
    gradient (backward)."""
    tokens, vocab, hidden = values["batch"] * values["seq"], values["vocab"], values["hidden"]
    rows = expected_rows_read(vocab, tokens) * hidden
    forward = rows + tokens * hidden
    backward = tokens * hidden + vocab * hidden
    return INDEX_BYTES * tokens + element_size(dtype) * by_pass(forward, backward, pass_)


def torch_embedding(module_class, values):
    """``vocab`` rows of ``hidden``: how torch's and Liger's modules are both built."""
    return module_class(values["vocab"], values["hidden"])


HUGGINGFACE = ModuleComparator(
    name="huggingface", project="PyTorch", distribution="torch",
    module="torch.nn:Embedding",
    construct=torch_embedding,
    parameters={"weight": "weight"},
    details={"upstream": "the module upstream's huggingface rows time"},
)

LIGER = ModuleComparator(
    name="liger", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.experimental.embedding:LigerEmbedding",
    construct=torch_embedding,
    parameters={"weight": "weight"},
    targets=("cuda",),
)

FAMILY = FormulatedFamily(
    definition=EMBEDDING,
    formulation=embedding,
    description="torch.nn.functional.embedding(indices, weight)",
    inputs={"indices": indices_below("vocab"), "weight": normal()},  # torch.nn.Embedding's initial N(0, 1) weight
    flop_count=flop_count,
    byte_count=byte_count,
    comparators=(HUGGINGFACE, LIGER),
)
