"""DyT on the CPU: torch and torch.compile of the formulation."""

from plugins.dyt.reference import FAMILY

TARGET = FAMILY.target("cpu", "gamma * tanh(alpha * x) + beta in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
