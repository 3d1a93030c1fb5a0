"""Multi-token attention on the CPU: the upstream torch formulation, and torch.compile of it.

The hooks that do not depend on the target (workload, reference, cost) live here
and are reused by :mod:`plugins.multi_token_attention.cuda`.
"""

import torch

from plugins.multi_token_attention import reference
from plugins.multi_token_attention.definition import MULTI_TOKEN_ATTENTION
from runners import hookimpl
from runners.types import Implementation, KernelPlugin, PreparedPass, WorkloadCost

GRAD_OUTPUT_SEED_OFFSET = 7_919  # the upstream gradient draws from its own seed, apart from the inputs

TORCH = Implementation("torch", "PyTorch", torch.__version__,
                       {"formulation": "mask, softmax, conv2d, mask (upstream module)"})
TORCH_COMPILE = Implementation("torch_compile", "PyTorch", torch.__version__,
                               {"formulation": "mask, softmax, conv2d, mask", "compiler": "torch.compile",
                                "mode": "default"})

PLUGIN = KernelPlugin(
    family=MULTI_TOKEN_ATTENTION,
    target="cpu",
    implementations=(TORCH, TORCH_COMPILE),
    description="The upstream benchmark's torch module as a function, and torch.compile of it.",
)


def differentiable_pass(function, workload, pass_, settled_details=None, float64=False) -> PreparedPass:
    """``function(scores, weight, bias, groups=...)`` over the workload's tensors as a prepared pass
    (see :meth:`PreparedPass.on_workload`)."""
    groups = workload.parameters["groups"]

    def forward(leaves):
        return function(leaves["scores"], leaves["weight"], leaves.get("bias"), groups=groups)

    return PreparedPass.on_workload(forward, workload, pass_, settled_details, float64)


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def build_workload(parameters, dtype, options, seed, device):
    values = {**parameters, **options}
    tensors = {name: tensor for name, tensor in reference.make_workload(values, dtype, device, seed).items()
               if tensor is not None}
    generator = torch.Generator().manual_seed(seed + GRAD_OUTPUT_SEED_OFFSET)
    shape = (parameters["batch"], parameters["heads_out"], parameters["seq"], parameters["seq"])
    tensors["grad_output"] = torch.randn(shape, generator=generator, dtype=torch.float32).to(
        device=device, dtype=reference.torch_dtype(dtype))
    return tensors


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if implementation.name == "torch":
        return differentiable_pass(reference.multi_token_attention_torch, workload, pass_)
    if implementation.name == "torch_compile":
        return differentiable_pass(torch.compile(reference.multi_token_attention_torch), workload, pass_)
    return None


@hookimpl
def reference_outputs(workload, pass_):
    return differentiable_pass(reference.multi_token_attention_float64, workload, pass_, float64=True).run_once()


@hookimpl
def workload_cost(parameters, dtype, options, pass_):
    values = {**parameters, **options}
    return WorkloadCost(flops=reference.flop_count(values, pass_), bytes=reference.min_bytes(values, dtype, pass_))
