"""Multi-token attention on the CPU: the upstream torch module as a function, and torch.compile of it."""

from plugins.multi_token_attention.reference import FAMILY
from runners import hookimpl
from runners.types import KernelPlugin

PLUGIN = KernelPlugin(
    family=FAMILY.definition,
    target="cpu",
    implementations=FAMILY.torch_implementations,
    description="The upstream benchmark's torch module as a function, and torch.compile of it.",
)

build_workload = FAMILY.build_workload  # the family's hooks that every target registers
reference_outputs = FAMILY.reference_outputs
workload_cost = FAMILY.workload_cost


@hookimpl
def kernel_plugin():
    return PLUGIN


@hookimpl
def prepare_pass(implementation, workload, pass_):
    return FAMILY.prepare_torch(implementation, workload, pass_)
