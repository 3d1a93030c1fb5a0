"""Total variation distance on the CPU: torch and torch.compile of the formulation."""

from plugins.tvd.reference import FAMILY

TARGET = FAMILY.target("cpu", "Upstream's TorchTVDLoss formulation (batchmean) in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
