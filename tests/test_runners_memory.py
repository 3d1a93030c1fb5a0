"""The memory metric: what a memory result holds, that the CPU records none, and how a measured peak is recorded.

Measuring a peak needs a CUDA device and compiled kernels (the tests that do are skipped without them:
``TRITON_INTERPRET=0`` on a GPU host); on the CPU the
figures are made up, to check the summary and the path from bundle line to a ranked memory run.
"""

import dataclasses

import pytest
import torch

from runners import memory
from runners.discovery import get_registry
from runners.rerun import (RerunError, RerunRequest, _plugin_and_implementations, _PluginCalls, capture_environment,
                           measure, rerun_workload)
from runners.timing import protocol_document
from tests.conftest import needs_compiled_cuda

SMALL_SOFTMAX = {"tokens": 64, "hidden": 1024}


def test_tensor_bytes_counts_each_storage_once():
    base = torch.zeros(256, 4)
    assert memory.tensor_bytes({"x": base, "view": base[:, :2], "other": torch.zeros(8, dtype=torch.bfloat16)}) \
        == 256 * 4 * 4 + 8 * 2


def test_the_summary_is_the_peaks_in_mb_with_their_method():
    summary = memory.memory_summary([10.0, 12.0, 11.0, 10.0, 10.0], inputs_bytes=3 * 2 ** 20)
    assert (summary["unit"], summary["median"], summary["p20"], summary["p80"]) == ("MB", 10.0, 10.0, 11.2)
    assert summary["inputs"] == 3.0 and summary["method"]["probe"] == "torch.cuda.max_memory_allocated"


@pytest.fixture(scope="module")
def cpu_results():
    request = RerunRequest("softmax", "forward", SMALL_SOFTMAX, "fp32", memory_rerun_of={"torch": "0123456789ab"})
    return rerun_workload(request, target="cpu", implementations=["torch"],
                          protocol=protocol_document("smoke", "cpu"), environment=capture_environment("cpu", "cpu"))


def test_a_cpu_rerun_records_no_memory(cpu_results):
    assert [(result.metric, result.passed) for result in cpu_results] == [("speed", True)]
    assert "memory" not in cpu_results[0].as_document()


def test_a_memory_bundle_line_imports_as_a_memory_run(cpu_results, small_app, runner, tmp_path):
    """The bundle line of a memory result (its peak made up here) becomes a memory run in MB."""
    from app.models import Run

    measured = dataclasses.replace(cpu_results[0], metric=memory.METRIC, timing=None,
                                   memory=memory.memory_summary([3.5, 3.5, 3.75], inputs_bytes=2 ** 18))
    bundle = tmp_path / "memory.jsonl"
    bundle.write_text(measured.bundle_line() + "\n")
    imported = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert imported.exit_code == 0, imported.output
    with small_app.app_context():
        run = Run.get(Run.source == "kernelindex")
        assert (run.metric, run.unit, run.median, run.rank, run.pass_) == ("memory", "MB", 3.5, 1, "forward")


@needs_compiled_cuda
def test_a_cuda_rerun_measures_each_implementations_peak_as_upstream_counts_it():
    """torch's forward softmax writes one output the size of its 64 MB input: the peak counted the way upstream
    counts it is the workload's own tensors plus that output, however many other workloads are allocated."""
    request = RerunRequest("softmax", "forward", {"tokens": 4096, "hidden": 4096}, "fp32",
                           memory_rerun_of={"torch": "0123456789ab"})
    results = rerun_workload(request, target="cuda", implementations=["torch", "torch_compile"],
                             protocol=protocol_document("smoke", "cuda"),
                             environment=capture_environment("cuda", "cuda:0"))
    peaks = {result.implementation.name: result for result in results if result.metric == memory.METRIC}
    assert set(peaks) == {"torch", "torch_compile"}
    assert all(result.passed for result in peaks.values()), {name: result.error for name, result in peaks.items()}
    torch_peak = peaks["torch"].memory
    assert torch_peak["inputs"] >= 64.0
    assert torch_peak["inputs"] + 64.0 <= torch_peak["median"] < torch_peak["inputs"] + 66.0
    assert peaks["torch"].rerun_of == "0123456789ab" and peaks["torch_compile"].rerun_of is None


def test_a_memory_only_rerun_is_refused_where_no_memory_is_measured():
    request = RerunRequest("softmax", "forward", SMALL_SOFTMAX, "fp32")
    with pytest.raises(RerunError, match="a cpu rerun measures no memory"):
        rerun_workload(request, target="cpu", implementations=["torch"], protocol=protocol_document("smoke", "cpu"),
                       environment={}, metrics=[memory.METRIC])
    with pytest.raises(RerunError, match="metrics are speed, memory, not power"):
        rerun_workload(request, target="cpu", implementations=["torch"], protocol=protocol_document("smoke", "cpu"),
                       environment={}, metrics=["speed", "power"])


def test_a_rerun_without_speed_times_nothing():
    """Only the correctness trials run: no timed call, no sample, where the same call with speed times them."""
    registry = get_registry()
    calls = _PluginCalls(registry, registry.find("softmax", "cpu"),
                         RerunRequest("softmax", "forward", SMALL_SOFTMAX, "fp32"), "cpu")
    _, chosen = _plugin_and_implementations(registry, "softmax", "cpu", ["torch"], "fp32")
    protocol = protocol_document("smoke", "cpu")
    [untimed] = measure(calls, chosen, protocol, "cpu", 0, lambda line: None, metrics=[memory.METRIC])
    assert untimed.error is None and untimed.correctness["passed"]
    assert (untimed.samples, untimed.timed_calls, untimed.wall_clock) == ([], 0, [])
    [timed] = measure(calls, chosen, protocol, "cpu", 0, lambda line: None, metrics=["speed"])
    assert timed.passed and timed.timed_calls >= protocol["trials"] * protocol["samplesPerTrial"]


@needs_compiled_cuda
def test_a_memory_only_cuda_rerun_records_checked_peaks_and_no_timing():
    request = RerunRequest("softmax", "forward", {"tokens": 1024, "hidden": 4096}, "fp32")
    results = rerun_workload(request, target="cuda", implementations=["torch"],
                             protocol=protocol_document("smoke", "cuda"),
                             environment=capture_environment("cuda", "cuda:0"), metrics=[memory.METRIC])
    assert [(result.metric, result.passed) for result in results] == [(memory.METRIC, True)]
    assert results[0].correctness["passed"] and results[0].memory["median"] >= 16.0
