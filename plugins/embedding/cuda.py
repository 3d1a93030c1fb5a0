"""Embedding on CUDA GPUs: torch, torch.compile, torch.nn.Embedding (upstream's huggingface) and Liger-Kernel's."""

from plugins.embedding.reference import FAMILY

TARGET = FAMILY.target("cuda", "torch.nn.functional.embedding in torch and torch.compile, torch.nn.Embedding "
                               "(upstream's huggingface rows) and Liger-Kernel's LigerEmbedding.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
