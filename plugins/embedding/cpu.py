"""Embedding on the CPU: torch and torch.compile of the formulation, and torch.nn.Embedding as upstream's huggingface."""

from plugins.embedding.reference import FAMILY

TARGET = FAMILY.target("cpu", "torch.nn.functional.embedding in torch and torch.compile, and torch.nn.Embedding "
                              "(upstream's huggingface rows).")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
