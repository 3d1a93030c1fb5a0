"""Distillation JSD loss on CUDA GPUs: torch, torch.compile and Liger-Kernel's fused linear JSD distillation."""

from plugins.distill_jsd_loss.reference import FAMILY

TARGET = FAMILY.target("cuda", "A student's and a teacher's linear heads, cross entropy and JSD in torch and "
                               "torch.compile, and Liger-Kernel's chunked fused linear JSD loss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
