"""Distillation cosine loss on CUDA GPUs: torch, torch.compile and Liger-Kernel's fused linear cosine distillation."""

from plugins.distill_cosine_loss.reference import FAMILY

TARGET = FAMILY.target("cuda", "A student's and a teacher's linear heads, cross entropy and cosine similarity in "
                               "torch and torch.compile, and Liger-Kernel's chunked fused linear cosine loss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
