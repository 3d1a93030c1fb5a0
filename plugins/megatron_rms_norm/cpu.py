"""Megatron RMSNorm on the CPU: torch.nn.RMSNorm's function in torch and torch.compile, and Megatron-Core's
WrappedTorchNorm."""

from plugins.megatron_rms_norm.reference import FAMILY

TARGET = FAMILY.target("cpu", "RMSNorm over [seq, batch, hidden] in torch and torch.compile, and Megatron-Core's "
                              "WrappedTorchNorm.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
