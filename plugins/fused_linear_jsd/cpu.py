"""Fused linear JSD on the CPU: torch and torch.compile of the formulation."""

from plugins.fused_linear_jsd.reference import FAMILY

TARGET = FAMILY.target("cpu", "A student's and a teacher's linear heads and their JSD in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
