"""Total variation distance on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerTVDLoss."""

from plugins.tvd.reference import FAMILY

TARGET = FAMILY.target("cuda", "Upstream's TorchTVDLoss formulation (batchmean) in torch and torch.compile, and "
                               "Liger-Kernel's LigerTVDLoss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
