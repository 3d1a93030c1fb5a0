"""Fused neighborhood attention on the CPU: the upstream torch module as a function, and torch.compile of the
gather formulation."""

from plugins.fused_neighborhood_attention.reference import FAMILY

TARGET = FAMILY.torch_target("cpu", "The upstream benchmark's torch module as a function, and torch.compile of "
                                    "the gather formulation.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
