"""Fused linear GRPO loss, token level, on the CPU: torch and torch.compile of the formulation."""

from plugins.fused_linear_grpo_loss_token.reference import FAMILY

TARGET = FAMILY.target("cpu", "A policy's and a reference model's linear heads and GRPO's loss with a ratio per token "
                              "in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
