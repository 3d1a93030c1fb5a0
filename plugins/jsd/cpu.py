"""Jensen-Shannon divergence on the CPU: torch and torch.compile of the formulation."""

from plugins.jsd.reference import FAMILY

TARGET = FAMILY.target("cpu", "Upstream's TorchJSD formulation (beta 0.5) in torch and torch.compile.")
kernel_plugin, prepare_pass = TARGET.kernel_plugin, TARGET.prepare_pass
build_workload, reference_outputs, workload_cost = FAMILY.build_workload, FAMILY.reference_outputs, FAMILY.workload_cost
