"""PolyNorm on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerPolyNorm (upstream's liger_triton)."""

from plugins.poly_norm.reference import FAMILY

TARGET = FAMILY.target("cuda", "PolyNorm's weighted sum of normalized powers in torch and torch.compile, and "
                               "Liger-Kernel's LigerPolyNorm (Triton).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
