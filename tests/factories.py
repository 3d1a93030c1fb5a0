"""Builders for test inputs: Liger-Kernel CSV files, and documents the harness would otherwise produce on a GPU host."""

import csv
import statistics
from datetime import datetime, timedelta, timezone

from runners.correctness import POLICY, POLICY_TEXT, policy_document
from runners.discovery import get_registry
from runners.rerun import completed_workload, plugin_cost
from runners.timing import percentile, protocol_document

# The columns of Liger-Kernel's benchmark/data/all_benchmark_data.csv, in order.
HEADER = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit", "x_name",
          "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80", "extra_benchmark_config_str", "gpu_name",
          "timestamp", "liger_version")


def write_liger_csv(path, rows):
    """Write ``HEADER`` and then ``rows`` (sequences of field values) as a Liger-Kernel CSV at ``path``."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def harness_cost(result: dict) -> dict:
    """The cost the harness records in a result: its family's own ``workload_cost`` count for the result's workload
    and pass, on its target."""
    registry, workload = get_registry(), result["workload"]
    plugin = registry.find(result["family"], result["environment"]["target"])
    parameters, options = completed_workload(plugin.record.family, workload["parameters"], workload["options"])
    return plugin_cost(registry, plugin, parameters, workload["dtype"], options, result["pass"]).as_document()


def rerun_result(run, implementation="kernelindex_triton", *, median=80_000.0, host="h200-a", status="passed",
                 observed_at="2026-11-29T10:00:00Z", spread=0.01, preset="standard", target="cuda", trials=None):
    """A result document as ``runners.rerun`` reports it on ``target``, for ``run``'s workload, under the published
    protocol ``preset`` (``trials``: as many trials as that, the protocol saying so, as no published protocol has)."""
    protocol = protocol_document(preset, target)
    if trials is not None:
        protocol["trials"] = trials
    per_trial = protocol["samplesPerTrial"]
    samples = [[median * (1 + spread * ((t + s) % 3 - 1) / 2) for s in range(per_trial)]
               for t in range(protocol["trials"])]
    flat = [v for trial in samples for v in trial]
    timing = {"unit": "ns", "median": percentile(flat, 50), "p20": percentile(flat, 20), "p80": percentile(flat, 80),
              "samples": samples, "trials": protocol["trials"], "samplesPerTrial": per_trial,
              "cv": statistics.stdev(flat) / statistics.mean(flat)}  # as runners.timing.timing_summary
    result = {
        "rerunOf": run.id,
        "family": run.kernel_id,
        "pass": run.pass_,
        "metric": "speed",
        "implementation": {"name": implementation, "project": "KernelIndex", "revision": "test",
                           "details": {"tf32": True}},
        "workload": {"parameters": run.parameters, "dtype": run.dtype, "options": run.options},
        "status": status,
        "error": None if status == "passed" else "relative L2 error 0.5 > tolerance 0.002",
        "timing": timing if status == "passed" else None,
        "correctness": correctness_record(error=1e-4 if status == "passed" else 0.5, dtype=run.dtype),
        "environment": {"hardware": {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90",
                                     "name": "NVIDIA H200"},
                        "software": {"torch": "2.11.0", "triton": "3.6.0", "cuda": "12.8"},
                        "host": host, "target": target},
        "protocol": protocol,
        "observedAt": observed_at,
    }
    return {**result, "cost": harness_cost(result)}


def correctness_record(error: float, trials: int = 3, dtype: str = "fp32") -> dict:
    """A correctness record judged under the current policy, of an implementation that declares TF32: one output, its
    error ``error`` in every trial."""
    reference_norm, tolerance = 8.0, POLICY.tolerance_for(dtype, True)
    return {"policy": policy_document(trials), "policyText": POLICY_TEXT, "passed": error <= tolerance,
            "relL2Error": error, "tolerance": tolerance, "outputErrors": {"output": error},
            "trials": trials, "tf32": True,
            "outputFigures": {"output": {"differenceNorms": [error * reference_norm] * trials,
                                         "referenceNorms": [reference_norm] * trials, "shape": [4, 4]}}}


def memory_result(run, implementation="kernelindex_triton", *, peak=48.0, host="h200-a",
                  observed_at="2026-11-29T10:00:00Z"):
    """A memory result as ``runners.rerun`` reports it on CUDA, with a made-up peak (``peak`` MB): measuring one
    needs a CUDA device, so the CPU suite can only check how a measured figure is recorded."""
    result = rerun_result(run, implementation, host=host, observed_at=observed_at)
    return {**result, "metric": "memory", "timing": None,
            "memory": {"unit": "MB", "median": peak, "p20": peak, "p80": peak + 0.5, "samples": [peak] * 3 + [peak + 0.5] * 2,
                       "inputs": 12.0, "method": {"probe": "torch.cuda.max_memory_allocated", "calls": 5}}}


def stamp(seconds_from_now: float = 0) -> str:
    """An ``observedAt`` this many seconds from now (negative: in the past), as the harness writes it."""
    moment = datetime.now(timezone.utc) + timedelta(seconds=seconds_from_now)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
