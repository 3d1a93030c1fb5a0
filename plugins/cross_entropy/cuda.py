"""Cross entropy on CUDA GPUs: torch, torch.compile, torch.nn.CrossEntropyLoss and Liger-Kernel's module."""

from plugins.cross_entropy.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.nn.functional.cross_entropy in torch and torch.compile, "
                               "torch.nn.CrossEntropyLoss (upstream's huggingface rows) and Liger-Kernel's "
                               "LigerCrossEntropyLoss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
