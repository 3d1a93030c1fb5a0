"""KL divergence on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerKLDIVLoss."""

from plugins.kl_div.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.nn.functional.kl_div (batchmean) in torch and torch.compile, and "
                               "Liger-Kernel's LigerKLDIVLoss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
