"""Fused linear GRPO loss, token level, on CUDA GPUs: torch, torch.compile and Liger-Kernel's fused linear GRPO loss."""

from plugins.fused_linear_grpo_loss_token.reference import FAMILY

TARGET = FAMILY.target("cuda", "A policy's and a reference model's linear heads and GRPO's loss with a ratio per "
                               "token in torch and torch.compile, and Liger-Kernel's chunked fused linear GRPO loss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
