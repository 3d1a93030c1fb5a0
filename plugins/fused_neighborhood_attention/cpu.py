"""Fused neighborhood attention on the CPU: the upstream torch formulation, and torch.compile.

The hooks that do not depend on the target (workload, reference, cost) live here
and are reused by :mod:`plugins.fused_neighborhood_attention.cuda`.
"""

import torch

from plugins.fused_neighborhood_attention import reference
from plugins.fused_neighborhood_attention.definition import FUSED_NEIGHBORHOOD_ATTENTION
from runners import hookimpl
from runners.types import Implementation, KernelPlugin, PreparedPass, WorkloadCost

ARGUMENTS = ("hidden_states", "q_weight", "q_bias", "k_weight", "k_bias", "v_weight", "v_bias",
             "out_weight", "out_bias")
"""The reference functions' positional arguments, by tensor name (biases absent without ``bias``)."""

GRAD_OUTPUT_SEED_OFFSET = 7_919  # the upstream gradient draws from its own seed, apart from the inputs

TORCH = Implementation("torch", "PyTorch", torch.__version__,
                       {"formulation": "dense masked attention with the mask built by a host loop (upstream module)"})
TORCH_COMPILE = Implementation("torch_compile", "PyTorch", torch.__version__,
                               {"formulation": "neighbor gather", "compiler": "torch.compile", "mode": "default"})

PLUGIN = KernelPlugin(
    family=FUSED_NEIGHBORHOOD_ATTENTION,
    target="cpu",
    implementations=(TORCH, TORCH_COMPILE),
    description="The upstream benchmark's torch module as a function, and torch.compile of the gather formulation.",
)


def positional(tensors):
    return [tensors.get(name) for name in ARGUMENTS]


def shape_arguments(parameters):
    return {"heads": parameters["heads"], "kernel_size": parameters["kernel_size"], "dilation": parameters["dilation"]}


def differentiable_pass(function, workload, pass_, settled_details=None, float64=False) -> PreparedPass:
    """``function`` over the workload's tensors as a prepared pass (see :meth:`PreparedPass.on_workload`)."""
    keywords = shape_arguments(workload.parameters)
    return PreparedPass.on_workload(lambda leaves: function(*positional(leaves), **keywords), workload, pass_,
                                    settled_details, float64)


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    values = {**parameters, **options}
    tensors = {name: tensor for name, tensor in reference.make_workload(values, dtype, device, seed).items()
               if tensor is not None}
    generator = torch.Generator().manual_seed(seed + GRAD_OUTPUT_SEED_OFFSET)
    shape = (parameters["batch"], parameters["seq"], parameters["hidden"])
    tensors["grad_output"] = torch.randn(shape, generator=generator, dtype=torch.float64).to(
        device=device, dtype=reference.torch_dtype(dtype))
    return tensors


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if implementation.name == "torch":
        return differentiable_pass(reference.fused_neighborhood_attention_torch, workload, pass_)
    if implementation.name == "torch_compile":
        return differentiable_pass(torch.compile(reference.fused_neighborhood_attention_gather), workload, pass_)
    return None


@hookimpl
def reference_outputs(workload, pass_):
    return differentiable_pass(reference.fused_neighborhood_attention_float64, workload, pass_, float64=True).run_once()


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    values = {**parameters, **options}
    return WorkloadCost(flops=reference.flop_count(values, pass_), bytes=reference.min_bytes(values, dtype, pass_))
