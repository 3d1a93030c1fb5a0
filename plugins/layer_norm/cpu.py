"""Layer norm on the CPU: torch and torch.compile of layer_norm, and torch.nn.LayerNorm as upstream's huggingface."""

from plugins.layer_norm.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.nn.functional.layer_norm in torch and torch.compile, and torch.nn.LayerNorm "
                              "(upstream's huggingface).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
