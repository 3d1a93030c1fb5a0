"""Fused linear CPO loss on the CPU: torch and torch.compile of the formulation (also upstream's huggingface)."""

from plugins.fused_linear_cpo_loss.reference import FAMILY

TARGET = FAMILY.target("cpu", "A linear head then the CPO loss in torch and torch.compile, and as upstream's "
                              "huggingface rows run it.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
