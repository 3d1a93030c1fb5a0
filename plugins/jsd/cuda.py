"""Jensen-Shannon divergence on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerJSD."""

from plugins.jsd.reference import FAMILY

TARGET = FAMILY.target("cuda", "Upstream's TorchJSD formulation (beta 0.5) in torch and torch.compile, and "
                               "Liger-Kernel's LigerJSD.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
