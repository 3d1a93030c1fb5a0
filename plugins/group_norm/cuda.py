"""Group norm on CUDA GPUs: torch, torch.compile, torch.nn.GroupNorm (upstream's huggingface) and Liger-Kernel's."""

from plugins.group_norm.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.nn.functional.group_norm in torch and torch.compile, torch.nn.GroupNorm "
                               "(upstream's huggingface) and Liger-Kernel's LigerGroupNorm.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
