"""Fused linear JSD on CUDA GPUs: torch, torch.compile and Liger-Kernel's fused linear JSD."""

from plugins.fused_linear_jsd.reference import FAMILY

TARGET = FAMILY.target("cuda", "A student's and a teacher's linear heads and their JSD in torch and torch.compile, "
                               "and Liger-Kernel's fused linear JSD.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
