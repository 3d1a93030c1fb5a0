"""Multi-token attention on the CPU: the upstream torch module as a function, and torch.compile of it."""

from plugins.multi_token_attention.reference import FAMILY

TARGET = FAMILY.torch_target("cpu", "The upstream benchmark's torch module as a function, and torch.compile of it.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
