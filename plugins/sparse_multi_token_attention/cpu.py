"""Sparse multi-token attention on the CPU: torch and torch.compile of the formulation."""

from plugins.sparse_multi_token_attention.reference import FAMILY

TARGET = FAMILY.target("cpu", "Mask, sparsemax, conv2d, mask in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
