"""The one reference for tiled SwiGLU, shared by every target and the tests.

Tiling changes the schedule, not the result: cutting the sequence into ``num_shards``
shards, running the MLP on each without keeping its activations and recomputing each
shard's forward in the backward gives SwiGLU's output and gradients
(:mod:`plugins.swiglu.reference`, whose formulation, input draws, FLOP count and Hugging
Face and Liger comparators serve here unchanged). The least memory traffic is SwiGLU's
too; the tiled modules pay a second forward in their backward to hold only one shard's
``[shard, intermediate]`` projections at a time.

Upstream's comparators, by its ``kernel_provider`` names: ``huggingface`` (``LlamaMLP``),
``liger`` (``LigerSwiGLUMLP``, untiled), ``liger_tiled`` (``LigerTiledSwiGLUMLP``) and
``deepspeed_tiled`` (``LlamaMLP`` through DeepSpeed's ``TiledMLP`` autograd function;
upstream's script carries a copy of it, here DeepSpeed's own is run when it imports).
"""

from dataclasses import dataclass, replace

import torch

from plugins._formulated import FormulatedFamily, ModuleComparator
from plugins.swiglu.reference import HUGGINGFACE, INPUTS, LIGER, PROJECTIONS, flop_count, liger_mlp_config, \
    llama_config, swiglu_mlp
from plugins.tiled_swiglu.definition import TILED_SWIGLU
from runners.types import PreparedPass


@dataclass(frozen=True)
class TiledModuleComparator(ModuleComparator):
    """A tiled MLP module. Its forward runs each shard without grad, so the projections are not in the output's
    graph: its backward recomputes each shard and accumulates their gradients into ``.grad``. A pass
    differentiates the input through the graph, then takes each projection's gradient from ``.grad`` and
    clears it, so none accumulates from one call to the next."""

    def prepare(self, module_class, workload, pass_, upstream_gradient=None, no_grad=()):
        module, leaves, inputs = self.bind(module_class, workload, no_grad)
        weights = {name: leaves.pop(name) for name in self.parameters}
        if upstream_gradient is None:
            upstream_gradient = workload.tensors["grad_output"]
        prepared = PreparedPass.autograd(lambda: module(*inputs), pass_, leaves, upstream_gradient)
        if pass_ == "forward":
            return prepared

        def run():
            results = dict(prepared.run())
            for name, weight in weights.items():
                results[f"grad_{name}"], weight.grad = weight.grad, None
            return results
        return replace(prepared, run=run)


class TiledLlamaMLP(torch.nn.Module):
    """Hugging Face's ``LlamaMLP`` called through a tiling autograd function (DeepSpeed's ``TiledMLP``), which
    takes the MLP, its input, the shard count and the parameters it computes with: upstream's
    ``deepspeed_tiled`` provider."""

    def __init__(self, tiled_function, config, num_shards):
        from transformers.models.llama.modeling_llama import LlamaMLP

        super().__init__()
        self.tiled_function, self.num_shards = tiled_function, num_shards
        self.mlp = LlamaMLP(config)

    def forward(self, hidden_states):
        return self.tiled_function.apply(lambda mlp, shard: mlp(shard), self.mlp, hidden_states, self.num_shards,
                                         list(self.mlp.parameters()))


def deepspeed_tiled(activation_family: str) -> TiledModuleComparator:
    """``deepspeed_tiled`` around Hugging Face's ``LlamaMLP`` of the workload's ``hidden_act`` (``activation_family``
    names it in the details): pure torch, so on every target."""
    return TiledModuleComparator(
        name="deepspeed_tiled", project="DeepSpeed", distribution="deepspeed",
        module="deepspeed.runtime.sequence_parallel.ulysses_sp:TiledMLP",
        construct=lambda function, values: TiledLlamaMLP(function, llama_config(values), values["num_shards"]),
        parameters={name: f"mlp.{path}" for name, path in PROJECTIONS.items()},
        details={"mlp": f"transformers LlamaMLP ({activation_family})", "shards": "the workload's num_shards"},
    )


LIGER_TILED = TiledModuleComparator(
    name="liger_tiled", project="Liger-Kernel", distribution="liger-kernel",
    module="liger_kernel.transformers.tiled_mlp:LigerTiledSwiGLUMLP",
    construct=lambda module_class, values: module_class(liger_mlp_config(values), num_shards=values["num_shards"]),
    parameters=PROJECTIONS,
    targets=("cuda",),
    details={"shards": "the workload's num_shards"},
)

FAMILY = FormulatedFamily(
    definition=TILED_SWIGLU,
    formulation=swiglu_mlp,
    description="linear, silu, multiply, linear (Llama's MLP, untiled)",
    inputs=INPUTS,
    flop_count=flop_count,
    comparators=(HUGGINGFACE, LIGER, LIGER_TILED, deepspeed_tiled("silu")),
)
