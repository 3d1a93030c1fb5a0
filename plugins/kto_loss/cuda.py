"""KTO loss on CUDA GPUs: torch, torch.compile, upstream's huggingface and Liger-Kernel's fused linear KTO loss."""

from plugins.kto_loss.reference import FAMILY

TARGET = FAMILY.target("cuda", "A policy's and a reference model's linear heads and the KTO loss in torch and "
                               "torch.compile, upstream's huggingface rows (the formulation), and Liger-Kernel's "
                               "chunked fused linear KTO loss.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
