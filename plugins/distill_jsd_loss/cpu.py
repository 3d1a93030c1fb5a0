"""Distillation JSD loss on the CPU: torch and torch.compile of the formulation."""

from plugins.distill_jsd_loss.reference import FAMILY

TARGET = FAMILY.target("cpu", "A student's and a teacher's linear heads, cross entropy and JSD in torch and "
                              "torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
