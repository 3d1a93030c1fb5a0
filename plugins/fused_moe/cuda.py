"""Fused MoE on CUDA GPUs: torch, torch.compile and the experts loop, and Liger-Kernel's fused MoE function."""

from plugins.fused_moe.reference import FAMILY

TARGET = FAMILY.target("cuda", "Routed tokens through their top-k experts' SwiGLU MLPs in torch and torch.compile, "
                               "and Liger-Kernel's LigerFusedMoEFunction.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
