"""Third-party implementations are measured alone in a spawned child process; built-ins stay in the harness process."""

import math
import os
import shutil
import time
from pathlib import Path

import pytest

from runners import correctness, discovery, isolation, timing
from runners.rerun import Measured, RerunRequest, rerun_workload
from runners.timing import protocol_document

TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"
REQUEST = RerunRequest("rms_norm", "full", {"tokens": 5, "hidden": 48}, "fp32", {"eps": 1e-6})


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """The isolation plugins, and a plugin that replaces the clock when imported (discovery refuses it)."""
    plugins_dir = tmp_path_factory.mktemp("plugins")
    for path in (TEST_PLUGINS / "isolation").glob("*.py"):
        shutil.copy(path, plugins_dir)
    shutil.copy(TEST_PLUGINS / "adversarial" / "import_time_clock.py", plugins_dir)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(plugins_dir))
        yield discovery.get_registry()


@pytest.fixture(scope="module")
def progress():
    return []


@pytest.fixture(scope="module")
def results(registry, progress):
    found = rerun_workload(REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"), registry=registry,
                           implementations=["torch", "records_pid", "crashes", "answers_garbage", "fast_clock"],
                           progress=progress.append)
    return {result.implementation.name: result.as_document() for result in found}


def test_a_directory_plugins_implementation_runs_in_a_spawned_child_that_loads_only_what_it_needs(results):
    measured = results["records_pid"]
    assert measured["status"] == "passed", measured["error"]
    ran = measured["implementation"]["details"]
    assert ran["pid"] != os.getpid()
    with pytest.raises(ProcessLookupError):
        os.kill(ran["pid"], 0)  # stopped once it answered
    assert ran["module"] == "kernelindex_plugins_dir.isolated_rms_norm"
    assert "plugins.rms_norm.cpu" in ran["pluginModules"]
    assert not {"plugins.fused_neighborhood_attention.cpu", "plugins.rms_norm.cuda",
                "kernelindex_plugins_dir.clock_in_child"} & set(ran["pluginModules"])  # spawned, not forked
    assert measured["integrity"]["isolation"] == isolation.CHILD_PROCESS
    assert measured["integrity"]["violations"] == [] and measured["integrity"]["timedCalls"] == 12


def test_built_ins_are_measured_in_the_harness_process(results):
    builtin = results["torch"]
    assert builtin["status"] == "passed", builtin["error"]
    assert builtin["integrity"]["isolation"] == isolation.HARNESS_PROCESS
    assert "pid" not in builtin["implementation"]["details"]


def test_the_childs_progress_reaches_the_parent(progress):
    assert "  records_pid: measured alone, in a child process" in progress
    trials = len(correctness.trials_for(protocol_document("smoke", "cpu")["correctnessTrials"], REQUEST.dtype))
    assert any(line.startswith(f"  correctness trial {trials - 1}/{trials} records_pid: relative L2 error")
               for line in progress)


def test_a_clock_replaced_at_import_never_times_the_built_ins_and_the_plugin_is_refused(registry, results):
    [refused] = [plugin for plugin in registry.broken if plugin.name.endswith("import_time_clock.py")]
    assert refused.error == "IntegrityViolation: importing it replaced the harness's time.perf_counter_ns (put back)"
    assert time.perf_counter_ns.__module__ == "time"
    builtin = results["torch"]
    assert builtin["integrity"]["violations"] == []
    # An autograd forward and backward takes tens of microseconds at least; the replaced clock would say nanoseconds.
    assert min(sample for trial in builtin["timing"]["samples"] for sample in trial) > 5_000


def test_a_clock_replaced_only_in_the_child_is_caught_there(registry, results):
    assert not [plugin for plugin in registry.broken if plugin.name.endswith("clock_in_child.py")]
    caught = results["fast_clock"]
    violation = "importing it replaced the harness's time.perf_counter_ns (put back)"
    assert caught["status"] == "failed" and caught["timing"] is None
    assert caught["error"] == f"import: integrity violation: {violation}"
    assert caught["integrity"]["violations"] == [f"import: {violation}"]
    assert caught["integrity"]["isolation"] == isolation.CHILD_PROCESS


def test_a_child_that_crashes_fails_its_result_and_the_others_go_on(results):
    crashed = results["crashes"]
    assert crashed["status"] == "failed" and crashed["timing"] is None
    assert crashed["error"] == "child process: exited with code 3 before answering"
    trials = correctness.trials_for(protocol_document("smoke", "cpu")["correctnessTrials"], REQUEST.dtype)
    assert not crashed["correctness"]["passed"] and crashed["correctness"]["trials"] == len(trials)
    assert results["torch"]["status"] == results["records_pid"]["status"] == "passed"


def test_a_child_that_answers_garbage_fails_its_result(results):
    garbage = results["answers_garbage"]
    assert garbage["status"] == "failed" and garbage["timing"] is None
    assert garbage["error"].startswith("child process: answered garbage (an answer with fields ['samples'], not ")


def test_a_child_that_hangs_is_stopped_at_its_deadline_and_the_built_ins_pass(registry):
    started = time.monotonic()
    hung, builtin = sorted(rerun_workload(REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu", 3),
                                          registry=registry, implementations=["hangs", "torch"]),
                           key=lambda result: result.implementation.name)
    assert hung.status == "failed" and hung.error == "child process: no answer within 6 s (2 × its budget); stopped"
    assert builtin.status == "passed", builtin.error
    assert time.monotonic() - started < isolation.DEADLINE["startSeconds"]


def answer(**changes):
    honest = {"error": None, "samples": [[1000.0, 1200.0]], "host_exposed": 0, "host_inclusive": [1100.0],
              "host_synchronization": None, "correctness": {}, "input_seeds": [7], "timed_calls": 4,
              "audited_calls": [1, 3], "distinct_addresses": 4, "wall_clock": [], "violations": [], "settled_details": {}, "memory": None,
              "memory_error": None, "telemetry": {"available": False}}
    return {**honest, **changes}


def test_an_answer_of_the_right_shape_is_read_as_measured():
    measured = Measured.from_answer("mine", answer())
    assert (measured.name, measured.isolation, measured.passed) == ("mine", isolation.CHILD_PROCESS, True)


@pytest.mark.parametrize("wrong", [
    answer(samples=[[]]), answer(samples=[[math.nan]]), answer(samples="fast"), answer(host_exposed=True),
    answer(timed_calls=4.0), answer(wall_clock=[1]), answer(correctness=[]), answer(isolation="harness process"),
    {key: value for key, value in answer().items() if key != "telemetry"}, [answer()],
])
def test_an_answer_of_another_shape_is_garbage(wrong):
    with pytest.raises(ValueError, match="an answer"):
        Measured.from_answer("mine", wrong)


def test_the_protocol_says_where_implementations_are_measured():
    document = protocol_document("standard", "cuda")
    assert "never interleaved" in document["isolation"]["childProcess"]
    assert "spawn" in document["isolation"]["childProcess"]
    assert document["isolation"]["deadline"] == isolation.DEADLINE
    assert "third-party implementation" in timing.INTEGRITY_CHECKS and "never interleaved" in timing.INTEGRITY_CHECKS


def test_an_entry_points_implementation_is_loaded_from_its_entry_point_in_the_child(tmp_path, monkeypatch):
    """An installed distribution (a dist-info on sys.path, which the spawned child inherits) whose entry point adds
    ``records_pid`` to ``rms_norm``: the child finds the same entry point and loads its module."""
    shutil.copy(TEST_PLUGINS / "isolation" / "isolated_rms_norm.py", tmp_path / "isolated_rms_norm_package.py")
    dist_info = tmp_path / "isolated_rms_norm_package-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: isolated-rms-norm-package\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        f"[{discovery.ENTRY_POINT_GROUP}]\nisolated = isolated_rms_norm_package\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = discovery.build_registry(None)
    [plugin] = [plugin for plugin in registry.plugins if plugin.origin == discovery.ENTRY_POINT]
    assert plugin.source == discovery.PluginSource("isolated (isolated_rms_norm_package)", discovery.ENTRY_POINT,
                                                   "isolated_rms_norm_package")
    [result] = rerun_workload(REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"), registry=registry,
                              implementations=["records_pid"])
    assert result.status == "passed", result.error
    ran = result.implementation.details
    assert ran["pid"] != os.getpid() and ran["module"] == "isolated_rms_norm_package"
    assert result.integrity["isolation"] == isolation.CHILD_PROCESS
