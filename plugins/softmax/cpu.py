"""Softmax on the CPU: torch.softmax and torch.compile of it."""

from plugins.softmax.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.softmax over the last dimension, and torch.compile of it.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
