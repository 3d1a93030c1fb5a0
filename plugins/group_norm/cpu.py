"""Group norm on the CPU: torch and torch.compile of group_norm, and torch.nn.GroupNorm as upstream's huggingface."""

from plugins.group_norm.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.nn.functional.group_norm in torch and torch.compile, and torch.nn.GroupNorm "
                              "(upstream's huggingface).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
