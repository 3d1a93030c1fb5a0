"""Sparse multi-token attention on CUDA GPUs: torch, torch.compile and Liger-Kernel's sparse LigerMultiTokenAttention."""

from plugins.sparse_multi_token_attention.reference import FAMILY

TARGET = FAMILY.target("cuda", "Mask, sparsemax, conv2d, mask in torch and torch.compile, and Liger-Kernel's "
                               "LigerMultiTokenAttention with sparse=True.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
