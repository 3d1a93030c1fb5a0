"""Megatron RMSNorm on CUDA GPUs: torch, torch.compile, Megatron-Core's WrappedTorchNorm and Liger-Kernel's
LigerMegatronRMSNorm."""

from plugins.megatron_rms_norm.reference import FAMILY

TARGET = FAMILY.target("cuda", "RMSNorm over [seq, batch, hidden] in torch and torch.compile, Megatron-Core's "
                               "WrappedTorchNorm and Liger-Kernel's LigerMegatronRMSNorm.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
