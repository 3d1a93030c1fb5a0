"""Fused linear cross-entropy on CUDA GPUs: torch, torch.compile, upstream's huggingface and Liger-Kernel's."""

from plugins.fused_linear_cross_entropy.reference import FAMILY

TARGET = FAMILY.target("cuda", "A linear head then cross-entropy in torch and torch.compile, as upstream's "
                               "huggingface rows run it, and Liger-Kernel's fused linear cross-entropy.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
