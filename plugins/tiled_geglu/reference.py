"""The one reference for tiled GEGLU, shared by every target and the tests.

Tiling changes the schedule, not the result (:mod:`plugins.tiled_swiglu.reference`): the
output and gradients are GEGLU's, so :mod:`plugins.geglu.reference`'s formulation, FLOP
count and Liger module serve here, with SwiGLU's input draws and Hugging Face comparator
(``LlamaMLP`` of the workload's ``hidden_act``). The tiled comparators are tiled SwiGLU's:
``liger_tiled`` is ``LigerTiledGEGLUMLP``, ``deepspeed_tiled`` DeepSpeed's ``TiledMLP``
around ``LlamaMLP``.
"""

from plugins._formulated import FormulatedFamily
from plugins.geglu.reference import LIGER, flop_count, geglu_mlp
from plugins.swiglu.reference import HUGGINGFACE, INPUTS, PROJECTIONS, liger_mlp_config
from plugins.tiled_geglu.definition import TILED_GEGLU
from plugins.tiled_swiglu.reference import TiledModuleComparator, deepspeed_tiled

LIGER_TILED = TiledModuleComparator(
    name="liger_tiled", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.tiled_mlp:LigerTiledGEGLUMLP",
    construct=lambda module_class, values: module_class(liger_mlp_config(values), num_shards=values["num_shards"]),
    parameters=PROJECTIONS,
    targets=("cuda",),
    details={"shards": "the workload's num_shards"},
)

FAMILY = FormulatedFamily(
    definition=TILED_GEGLU,
    formulation=geglu_mlp,
    description="linear, gelu (tanh), multiply, linear (Llama's MLP with gelu_pytorch_tanh, untiled)",
    inputs=INPUTS,
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER, LIGER_TILED, deepspeed_tiled("gelu_pytorch_tanh")),
)
