"""Sparsemax on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerSparsemax."""

from plugins.sparsemax.reference import FAMILY

TARGET = FAMILY.target("cuda", "Sparsemax by sorting each row, in torch and torch.compile, and Liger-Kernel's "
                               "LigerSparsemax.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
