"""Multi-token attention on CUDA GPUs: torch, torch.compile, Liger-Kernel and KernelIndex's Triton kernels.

Liger is listed only when ``liger_kernel`` imports. Workloads, reference and cost are the CPU plugin's.
"""

import importlib.metadata

import torch

from plugins._triton_launcher import kernelindex_implementation, kernelindex_settled_details
from plugins.multi_token_attention import cpu, reference, triton_kernels
from plugins.multi_token_attention.cpu import build_workload, differentiable_pass, reference_outputs, workload_cost
from plugins.multi_token_attention.definition import MULTI_TOKEN_ATTENTION
from runners import hookimpl
from runners.types import Implementation, KernelPlugin

__all__ = ["build_workload", "reference_outputs", "workload_cost"]  # shared hooks, registered here too

try:
    from liger_kernel.transformers.multi_token_attention import LigerMultiTokenAttention
except ImportError:
    LigerMultiTokenAttention = None


def liger_implementation():
    return Implementation("liger", "Liger-Kernel", importlib.metadata.version("liger-kernel"),
                          {"module": "LigerMultiTokenAttention", "padding": "k // 2"})


def available_implementations():
    implementations = list(cpu.PLUGIN.implementations)  # torch and torch.compile run on any device
    if LigerMultiTokenAttention is not None:
        implementations.append(liger_implementation())
    return (*implementations, kernelindex_implementation(triton_kernels))


PLUGIN = KernelPlugin(
    family=MULTI_TOKEN_ATTENTION,
    target="cuda",
    implementations=available_implementations(),
    description="Upstream torch module, torch.compile of it, Liger-Kernel's module and KernelIndex's Triton kernels.",
)


def liger_function(workload):
    """Liger's module, built for the workload, called with the workload's own weight and bias tensors."""
    parameters = workload.parameters
    k = parameters["k"]
    module = LigerMultiTokenAttention(in_channels=parameters["heads_in"], out_channels=parameters["heads_out"],
                                      kernel_size=k, padding=k // 2, groups=parameters["groups"],
                                      bias=bool(workload.options.get("bias", True)))
    module = module.to(device=workload.device, dtype=reference.torch_dtype(workload.dtype))

    def forward(scores, weight, bias, *, groups):
        tensors = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
        return torch.func.functional_call(module, tensors, (scores,))

    return forward


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def prepare_pass(implementation, workload, pass_):
    if implementation.name == "liger":
        return differentiable_pass(liger_function(workload), workload, pass_)
    if implementation.name == "kernelindex_triton":
        return differentiable_pass(triton_kernels.multi_token_attention_triton, workload, pass_,
                                   settled_details=kernelindex_settled_details(triton_kernels))
    return cpu.prepare_pass(implementation, workload, pass_)  # torch and torch.compile run on any device
