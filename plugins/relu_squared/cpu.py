"""Squared ReLU on the CPU: torch and torch.compile of the formulation."""

from plugins.relu_squared.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.square(torch.relu(input)) and torch.compile of it.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
