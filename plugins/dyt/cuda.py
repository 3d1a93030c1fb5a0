"""DyT on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerDyT (upstream's liger_triton)."""

from plugins.dyt.reference import FAMILY

TARGET = FAMILY.target("cuda", "gamma * tanh(alpha * x) + beta in torch and torch.compile, and Liger-Kernel's "
                               "LigerDyT (Triton).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
