"""Megatron cross entropy on CUDA GPUs: torch, torch.compile, Megatron-Core's fused and unfused vocab-parallel losses
and Liger-Kernel's LigerMegatronCrossEntropy, on one rank."""

from plugins.megatron_cross_entropy.reference import FAMILY

TARGET = FAMILY.target("cuda", "Per-token cross entropy of [seq, batch, vocab] logits in torch and torch.compile, "
                               "Megatron-Core's fused and unfused vocab-parallel losses and Liger-Kernel's "
                               "LigerMegatronCrossEntropy, on one rank.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
