"""Sparsemax on the CPU: torch and torch.compile of the formulation."""

from plugins.sparsemax.reference import FAMILY

TARGET = FAMILY.target("cpu", "Sparsemax by sorting each row, in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
