"""Fused linear ORPO loss on CUDA GPUs: torch, torch.compile, upstream's huggingface and Liger-Kernel's chunked loss."""

from plugins.fused_linear_orpo_loss.reference import FAMILY

TARGET = FAMILY.target("cuda", "A linear head then the ORPO loss in torch and torch.compile, as upstream's "
                               "huggingface rows run it, and Liger-Kernel's chunked fused linear ORPO loss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
