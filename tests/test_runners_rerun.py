"""Rerun orchestration on the CPU: typed results, and their bundle form the rerun importer records."""

import json
import re
from pathlib import Path

import pytest
import torch

from runners import discovery, rerun, timing
from runners.rerun import RerunError, RerunRequest, capture_environment, rerun_workload
from runners.timing import protocol_document
from tests.timing_support import SynchronizingItem

RESULT_KEYS = {"rerunOf", "family", "pass", "metric", "implementation", "workload", "status", "error", "timing",
               "correctness", "environment", "protocol", "observedAt", "cost", "integrity",
               "telemetry"}
TIMING_KEYS = {"unit", "median", "p20", "p80", "samples", "trials", "samplesPerTrial", "cv", "hostExposedSamples",
               "hostInclusive", "hostSynchronization"}
CORRECTNESS_KEYS = {"policy", "policyText", "passed", "relL2Error", "outputErrors", "tolerance", "trials", "tf32",
                    "outputFigures"}
SMALL_MTA = RerunRequest("multi_token_attention", "forward",
                         {"seq": 16, "batch": 1, "heads_in": 2, "heads_out": 2, "k": 3, "groups": 1}, "bf16",
                         {"bias": True})
SMALL_FNA = RerunRequest("fused_neighborhood_attention", "backward",
                         {"seq": 40, "batch": 1, "heads": 2, "hidden": 32, "dilation": 2, "kernel_size": 5}, "fp32",
                         {"bias": True}, rerun_of={"torch": "0123456789ab"})


@pytest.fixture(scope="module")
def environment():
    return capture_environment("cpu", "cpu")


@pytest.fixture(scope="module")
def fna_rerun(environment):
    [result] = rerun_workload(SMALL_FNA, target="cpu", implementations=["torch"],
                              protocol=protocol_document("smoke", "cpu"), environment=environment)
    return result


@pytest.fixture(scope="module")
def fna_result(fna_rerun):
    return fna_rerun.as_document()


def test_the_bundle_line_is_the_document_with_sorted_keys(fna_rerun, fna_result):
    assert fna_rerun.passed and fna_rerun.implementation.name == "torch"
    assert fna_rerun.bundle_line() == json.dumps(fna_result, sort_keys=True)
    assert json.loads(fna_rerun.bundle_line()) == fna_result


def test_result_has_exactly_the_documented_shape(fna_result):
    assert set(fna_result) == RESULT_KEYS
    assert set(fna_result["timing"]) == TIMING_KEYS
    assert set(fna_result["correctness"]) == CORRECTNESS_KEYS
    assert set(fna_result["implementation"]) == {"name", "project", "revision", "details", "mathMode"}
    assert {"hardware", "software", "host", "target", "cpu"} <= set(fna_result["environment"])
    assert json.loads(json.dumps(fna_result)) == fna_result


def test_result_describes_the_rerun(fna_result):
    assert fna_result["rerunOf"] == "0123456789ab"
    assert (fna_result["family"], fna_result["pass"], fna_result["metric"]) == \
        ("fused_neighborhood_attention", "backward", "speed")
    assert fna_result["workload"] == {"parameters": SMALL_FNA.parameters, "dtype": "fp32", "options": {"bias": True}}
    assert fna_result["status"] == "passed" and fna_result["error"] is None
    assert fna_result["implementation"]["project"] == "PyTorch"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", fna_result["observedAt"])
    assert fna_result["cost"]["flops"] > 0 and fna_result["cost"]["bytes"] > 0


def test_result_timing_follows_the_protocol(fna_result):
    timing, protocol = fna_result["timing"], fna_result["protocol"]
    assert protocol["name"] == "kernelindex-smoke" and protocol["comparabilityFamily"] == "kernelindex_rerun_smoke"
    assert timing["trials"] == protocol["trials"] == len(timing["samples"])
    assert all(len(trial) == protocol["samplesPerTrial"] for trial in timing["samples"])
    assert 0 < timing["p20"] <= timing["median"] <= timing["p80"]


def test_result_records_the_math_mode_of_its_dtype(fna_result, environment):
    assert fna_result["implementation"]["mathMode"] == "ieee-fp32"
    [bf16] = rerun_workload(SMALL_MTA, target="cpu", implementations=["torch"],
                            protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert bf16.as_document()["implementation"]["mathMode"] == "bf16"


def test_result_records_host_inclusive_time_and_no_synchronization_check_on_a_cpu(fna_result):
    timing_, protocol = fna_result["timing"], fna_result["protocol"]
    host = timing_["hostInclusive"]
    assert host["samples"] == protocol["trials"] * protocol["hostInclusive"]["samplesPerTrial"]
    assert 0 < host["p20"] <= host["median"] <= host["p80"]
    assert timing_["hostSynchronization"] is None and protocol["hostSynchronizationCheck"] is None


def test_a_pass_that_waits_on_the_host_is_recorded_not_failed(monkeypatch, environment):
    """``.item()`` inside the timed call, found by the check's CPU stand-in; the run still passes."""
    monkeypatch.setitem(timing.SYNCHRONIZATIONS_RAISE, "cpu", SynchronizingItem())
    conv2d = torch.nn.functional.conv2d

    def conv2d_reading_back(probs, *args, **kwargs):
        probs.sum().item()
        return conv2d(probs, *args, **kwargs)

    [clean] = rerun_workload(SMALL_MTA, target="cpu", implementations=["torch"],
                             protocol=protocol_document("smoke", "cpu"), environment=environment)
    monkeypatch.setattr(torch.nn.functional, "conv2d", conv2d_reading_back)
    [waits] = rerun_workload(SMALL_MTA, target="cpu", implementations=["torch"],
                             protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert clean.timing["hostSynchronization"] == {"detected": False, "detail": None}
    assert waits.passed and waits.timing["hostSynchronization"]["detected"] is True
    assert "synchronizing" in waits.timing["hostSynchronization"]["detail"]


def test_result_correctness_records_policy_and_error(fna_result):
    check = fna_result["correctness"]
    assert check["passed"] and check["tf32"] is False
    assert 0 < check["relL2Error"] <= check["tolerance"] == check["policy"]["tolerances"]["fp32"]
    assert check["trials"] == fna_result["protocol"]["correctnessTrials"] + 1  # and the fp32 precision trial
    assert max(check["outputErrors"].values()) == check["relL2Error"]


def test_unlinked_implementations_report_no_rerun_of(environment):
    [result] = rerun_workload(SMALL_MTA, target="cpu", implementations=["torch"],
                              protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert result.rerun_of is None and result.passed
    assert result.correctness["tolerance"] == result.correctness["policy"]["tolerances"]["bf16"]


@pytest.mark.parametrize("request_, target, implementations, message", [
    (SMALL_FNA, "cpu", ["liger"], "has no implementation 'liger'"),
    (RerunRequest("no_such_family", "forward", {}, "fp32"), "cpu", None, "no plugin implements"),
    (RerunRequest("fused_neighborhood_attention", "sideways", SMALL_FNA.parameters, "fp32"), "cpu", None,
     "pass must be one of"),
    (RerunRequest("fused_neighborhood_attention", "forward", {"seq": 8}, "fp32"), "cpu", None, "needs parameters"),
    (RerunRequest("fused_neighborhood_attention", "forward", SMALL_FNA.parameters, "fp32", {"bias": "no"}), "cpu",
     None, 'fused_neighborhood_attention workloads take the option bias as true or false, not "no"'),
])
def test_bad_requests_are_refused_before_any_work(request_, target, implementations, message, environment):
    with pytest.raises(RerunError, match=message):
        rerun_workload(request_, target=target, implementations=implementations,
                       protocol=protocol_document("smoke", "cpu"), environment=environment)


TOY_LINEAR = Path(__file__).resolve().parent / "plugins" / "toy_linear.py"


def toy_linear_answering(plugins_dir: Path, hook: str, body: str) -> Path:
    """tests/plugins/toy_linear.py with ``hook``'s function doing ``body`` instead, in ``plugins_dir``."""
    source = TOY_LINEAR.read_text()
    start = source.index(f"@hookimpl\ndef {hook}(")
    end = source.find("\n\n\n", start)
    signature = source[start:source.index("\n", source.index("def ", start))]
    plugin = plugins_dir / "toy_linear.py"
    plugin.write_text(source[:start] + f"{signature}\n    {body}" + (source[end:] if end != -1 else "\n"))
    return plugin


TOY_REQUEST = RerunRequest("toy_linear", "forward", {"rows": 8, "features": 4}, "fp32", {"bias": True})
TENSORS_BY_NAME = "not a mapping of tensor names to torch.Tensor"


@pytest.mark.parametrize("hook, body, reason", [
    ("build_workload", "return [torch.zeros(8, 4)]", f"returned list, {TENSORS_BY_NAME}"),
    ("build_workload", "return None", f"returned NoneType, {TENSORS_BY_NAME}"),
    ("build_workload", "return {'x': [[0.0] * 4] * 8}", f"returned dict whose 'x' is list, {TENSORS_BY_NAME}"),
    ("build_workload", "return {'x': torch.zeros(8, 4)}", "made no 'weight'"),
    ("build_workload", "return {name: torch.zeros(shape) for name, shape in (('x', (8, 4)), ('weight', (4, 4)), "
                       "('bias', (4,)))}",
     "made no 'grad_output' (every workload has one: the upstream gradient of the backward and full passes, shaped "
     "like the forward output)"),
    ("build_workload", "raise KeyError('rows')", "failed: KeyError: 'rows'"),
    ("build_workload", "return {name: torch.zeros(shape, device='meta') for name, shape in "
                       "(('x', (8, 4)), ('weight', (4, 4)), ('bias', (4,)), ('grad_output', (8, 4)))}",
     "made bias, grad_output, weight, x on meta, not on the workload's device cpu"),
    ("reference_outputs", "return torch.zeros(8, 4, dtype=torch.float64)", f"returned Tensor, {TENSORS_BY_NAME}"),
    ("reference_outputs", "return {'output': 1.0}", f"returned dict whose 'output' is float, {TENSORS_BY_NAME}"),
    ("reference_outputs", "return {1: torch.zeros(8, 4)}", f"returned dict whose 1 is Tensor, {TENSORS_BY_NAME}"),
    ("reference_outputs", "return {}", f"returned an empty dict, {TENSORS_BY_NAME}"),
    ("reference_outputs", "return __import__('collections').ChainMap(None)",
     f"returned ChainMap that cannot be read (TypeError: 'NoneType' object is not iterable), {TENSORS_BY_NAME}"),
])
def test_a_tensor_hook_that_breaks_the_contract_stops_the_rerun_naming_the_hook_and_the_plugin(
        hook, body, reason, tmp_path, monkeypatch, environment):
    """Measured in the harness process, as the built-in plugins are."""
    plugin = toy_linear_answering(tmp_path, hook, body)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setattr(rerun.isolation, "third_party", lambda family_plugin, provider: False)
    with pytest.raises(RerunError) as refused:
        rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert str(refused.value) == f"{plugin}'s {hook} hook (toy_linear on cpu) {reason}"


@pytest.mark.parametrize("hook, body, reason", [
    ("build_workload", "return None", f"returned NoneType, {TENSORS_BY_NAME}"),
    ("reference_outputs", "return {'output': 1.0}", f"returned dict whose 'output' is float, {TENSORS_BY_NAME}"),
])
def test_a_tensor_hook_that_breaks_the_contract_in_a_child_process_fails_its_result_naming_it(
        hook, body, reason, tmp_path, monkeypatch, environment):
    plugin = toy_linear_answering(tmp_path, hook, body)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    [result] = rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"),
                              environment=environment)
    assert result.error == f"child process: RerunError: {plugin}'s {hook} hook (toy_linear on cpu) {reason}"
    assert result.status == "failed"


@pytest.mark.parametrize("body, answered", [
    ("return None", "nothing"),
    ("return {'output': torch.zeros(8, 4)}", "dict, not a PreparedPass,"),
    ("return lambda: {'output': torch.zeros(8, 4)}", "function, not a PreparedPass,"),
])
def test_a_prepare_pass_that_answers_no_prepared_pass_fails_its_result_saying_so(body, answered, tmp_path, monkeypatch,
                                                                                 environment):
    """Measured in the harness process: the result fails naming the hook's answer (it was an AttributeError on
    ``.context`` deep in the timing harness)."""
    toy_linear_answering(tmp_path, "prepare_pass", body)
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setattr(rerun.isolation, "third_party", lambda family_plugin, provider: False)
    [result] = rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"),
                              environment=environment)
    assert result.status == "failed"
    assert result.error == f"prepare: the plugin's prepare_pass answered {answered} for torch"


@pytest.mark.parametrize("answer, reason", [
    ("None", "run returned NoneType, not a mapping of output names to tensors"),
    ("(value for value in [torch.zeros(8, 4)])", "run returned generator, not a mapping of output names to tensors"),
    ("{'output': 1.0}", "output is a float, not a tensor"),
    ("{'output': torch.zeros(8, 4).numpy()}", "output is a ndarray, not a tensor"),
])
def test_a_run_that_answers_no_tensors_fails_as_incorrect_not_as_a_cheat(answer, reason, tmp_path, monkeypatch,
                                                                        environment):
    """It was an AttributeError on ``.items`` or an integrity violation ("not a plain torch.Tensor"), which its host
    records as gamed: a careless answer is a wrong one, and only a tensor posing as another is a cheat."""
    toy_linear_answering(tmp_path, "prepare_pass", f"return PreparedPass(run=lambda: {answer})")
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setattr(rerun.isolation, "third_party", lambda family_plugin, provider: False)
    [result] = rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"),
                              environment=environment)
    assert (result.status, result.error) == ("failed", f"correctness trial 1: {reason}")
    assert result.integrity["violations"] == []


def test_settled_details_that_are_no_json_data_are_reported_not_fatal(tmp_path, monkeypatch, environment):
    """Measured in a child process, which sends them as JSON: it exited with code 1 before answering, and the
    result failed with no reason but that."""
    toy_linear_answering(tmp_path, "prepare_pass", "return PreparedPass.on_workload(linear_of, workload, pass_, "
                                                   "settled_details=lambda: {'config': object()})")
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    [result] = rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"),
                              environment=environment)
    assert result.status == "passed", result.error
    assert result.implementation.details == {
        "settledDetailsError": "TypeError: Object of type object is not JSON serializable"}
    assert json.loads(result.bundle_line())["implementation"]["details"] == result.implementation.details


@pytest.mark.parametrize("body, reason", [
    ("raise KeyError('rows')", "failed: KeyError: 'rows'"),
    ("return [['x', dtype]]", "failed: TypeError: toy_linear's derive_tensors answered list [['x', 'fp32']], not a "
                              "tuple of TensorSpec"),
])
def test_a_definition_whose_derive_tensors_breaks_stops_the_rerun_naming_it(body, reason, tmp_path, monkeypatch,
                                                                            environment):
    """A published run's rerun derives its tensors with no check before (``flask rerun RUN_ID``): it was the
    plugin's own traceback (or an AttributeError on ``spec.name``), not a one-line RerunError."""
    plugin = tmp_path / "toy_linear.py"
    source = TOY_LINEAR.read_text()
    plugin.write_text(source.replace("def derive_tensors(values, dtype):\n",
                                     f"def derive_tensors(values, dtype):\n    {body}\n", 1))
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    with pytest.raises(RerunError) as refused:
        rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert str(refused.value) == f"{plugin}'s derive_tensors (toy_linear on cpu) {reason}"


@pytest.mark.parametrize("answer, reason", [
    ("{'flops': 1, 'bytes': 2}", "returned dict, not a WorkloadCost"),
    ("WorkloadCost(flops=-1, bytes=float('nan'))",
     "failed: ValueError: WorkloadCost counts finite flops and bytes of at least zero, not flops=-1, bytes=nan"),
    ("WorkloadCost(flops='many', bytes=1)", "failed: TypeError: WorkloadCost.flops must be Real, not str 'many'"),
])
def test_a_workload_cost_hook_that_breaks_the_contract_stops_the_rerun_before_anything_is_measured(
        answer, reason, tmp_path, monkeypatch, environment):
    plugin = toy_linear_answering(tmp_path, "workload_cost", f"return {answer}")
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    measured = []
    monkeypatch.setattr(rerun, "measure", lambda *args, **kwargs: measured.append(args) or [])
    monkeypatch.setattr(rerun, "_measured_in_child", lambda *args, **kwargs: measured.append(args))
    with pytest.raises(RerunError) as refused:
        rerun_workload(TOY_REQUEST, target="cpu", protocol=protocol_document("smoke", "cpu"), environment=environment)
    assert str(refused.value) == f"{plugin}'s workload_cost hook (toy_linear on cpu) {reason}"
    assert measured == []


def test_a_sweep_value_equal_to_the_published_one_keeps_the_link_to_the_run_it_reproduces():
    """`flask rerun RUN --param seq=1024 --param seq=2048` on a run of seq 1024 (or an ask with params naming it)
    measured the published workload itself unlinked: its results reproduced no run, so the run's evidence was not
    raised, and an API ask so was not seen as the same work as the plain ask queued before it."""
    published = RerunRequest("sparsemax", "forward", {"batch": 4, "seq": 512, "hidden": 1024}, "fp32",
                             rerun_of={"torch": "ecd910a12250"}, memory_rerun_of={"torch": "1234567890ab"})
    same, changed = rerun.sweep_requests([published], {"seq": [512, 1024]})
    assert same == published
    assert (changed.parameters["seq"], changed.rerun_of, changed.memory_rerun_of) == (1024, {}, {})
