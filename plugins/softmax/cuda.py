"""Softmax on CUDA GPUs: torch.softmax, torch.compile of it and Liger-Kernel's LigerSoftmax."""

from plugins.softmax.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.softmax over the last dimension, torch.compile of it and Liger-Kernel's "
                               "LigerSoftmax.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
