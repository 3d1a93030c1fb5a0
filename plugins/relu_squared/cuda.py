"""Squared ReLU on CUDA GPUs: torch, torch.compile and Liger-Kernel's LigerReLUSquared."""

from plugins.relu_squared.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.square(torch.relu(input)), torch.compile of it and Liger-Kernel's "
                               "LigerReLUSquared.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
