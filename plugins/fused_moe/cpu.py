"""Fused MoE on the CPU: torch and torch.compile of the experts loop, and the loop as upstream's huggingface."""

from plugins.fused_moe.reference import FAMILY

TARGET = FAMILY.target("cpu", "Routed tokens through their top-k experts' SwiGLU MLPs in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
