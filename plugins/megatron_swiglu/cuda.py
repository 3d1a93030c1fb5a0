"""Megatron SwiGLU on CUDA GPUs: torch, torch.compile, Megatron-Core's bias_swiglu_impl and Liger-Kernel's
LigerMegatronSwiGLU, out of place and in place."""

from plugins.megatron_swiglu.reference import FAMILY

TARGET = FAMILY.target("cuda", "silu(gate) * up on the fused gate-up projection in torch and torch.compile, "
                               "Megatron-Core's bias_swiglu_impl and Liger-Kernel's LigerMegatronSwiGLU, out of "
                               "place and in place.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
