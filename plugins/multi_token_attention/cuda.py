"""Multi-token attention on CUDA GPUs: torch, torch.compile (default and max-autotune modes), Liger-Kernel and
KernelIndex's Triton kernels.

Liger is listed as unavailable, with the reason, where ``liger_kernel`` does not import. KernelIndex's convolution
multiplies fp32 in TF32, so on fp32 workloads torch, torch.compile and Liger (whose convolutions are cuDNN's) are
also offered with TF32 allowed (``+tf32``), and ``kernelindex_triton+tf32x3`` runs the same kernels with fp32-grade
products (three TF32 products each; math mode ``ieee-fp32``).
"""


import torch

from plugins._family import import_failure, library_revision, variant_of, with_tf32
from plugins._triton_launcher import (kernelindex_implementation, kernelindex_pass,
                                      kernelindex_precise_implementation)
from plugins.multi_token_attention import triton_kernels
from plugins.multi_token_attention.reference import FAMILY
from runners import hookimpl
from runners.types import Implementation, KernelPlugin, torch_dtype

try:
    from liger_kernel.transformers.multi_token_attention import LigerMultiTokenAttention
except ImportError as error:
    LigerMultiTokenAttention = None
    LIGER_UNAVAILABLE = import_failure("liger_kernel", error)
else:
    LIGER_UNAVAILABLE = None

LIGER = Implementation(
    "liger", "Liger-Kernel", library_revision("liger-kernel", LIGER_UNAVAILABLE),
    {"module": "LigerMultiTokenAttention", "padding": "k // 2"}, unavailable=LIGER_UNAVAILABLE)

KERNELINDEX = kernelindex_implementation(triton_kernels)
KERNELINDEX_PRECISE = kernelindex_precise_implementation(triton_kernels)

PLUGIN = KernelPlugin(
    family=FAMILY.definition,
    target="cuda",
    implementations=FAMILY.implementations_with(*map(with_tf32, FAMILY.torch_implementations),
                                                *FAMILY.max_autotune_implementations, LIGER, with_tf32(LIGER),
                                                KERNELINDEX, KERNELINDEX_PRECISE),
    description="Upstream torch module, torch.compile of it (default and max-autotune-no-cudagraphs modes), "
                "Liger-Kernel's module (each also with TF32 allowed, on fp32) and KernelIndex's Triton kernels (also "
                "with fp32-grade products, on fp32).",
)

build_workload = FAMILY.build_workload  # the family's hooks that every target registers
reference_outputs = FAMILY.reference_outputs
workload_cost = FAMILY.workload_cost


def liger_function(workload):
    """Liger's module, built for the workload, called with the workload's own weight and bias tensors."""
    parameters = workload.parameters
    k = parameters["k"]
    module = LigerMultiTokenAttention(in_channels=parameters["heads_in"], out_channels=parameters["heads_out"],
                                      kernel_size=k, padding=k // 2, groups=parameters["groups"],
                                      bias=bool(workload.options.get("bias", True)))
    module = module.to(device=workload.device, dtype=torch_dtype(workload.dtype))

    def forward(scores, weight, bias, *, groups):
        tensors = {"weight": weight} if bias is None else {"weight": weight, "bias": bias}
        return torch.func.functional_call(module, tensors, (scores,))

    return forward


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def prepare_pass(implementation, workload, pass_):
    name, tf32 = variant_of(implementation.name)
    if name == "liger":
        return FAMILY.prepare(liger_function(workload), workload, pass_, tf32=tf32)
    if implementation.name in (KERNELINDEX.name, KERNELINDEX_PRECISE.name):
        return kernelindex_pass(FAMILY, triton_kernels.multi_token_attention_triton, triton_kernels, implementation,
                                workload, pass_)
    return FAMILY.prepare_torch(implementation, workload, pass_)
