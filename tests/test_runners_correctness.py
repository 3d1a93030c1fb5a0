"""The correctness policy, and the adversarial plugins it must catch."""

import json
import re
from pathlib import Path

import pytest
import torch

from runners import correctness, discovery
from runners.correctness import POLICY, IncorrectOutput, check_trial, tolerance_for
from runners.rerun import RerunRequest, rerun_workload
from runners.timing import protocol_document

TEST_PLUGINS = Path(__file__).resolve().parent / "plugins"
ADVERSARIAL = RerunRequest("adversarial_linear", "forward", {"rows": 64, "features": 32}, "fp32")


@pytest.fixture(scope="module")
def adversarial_results():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(TEST_PLUGINS))
        results = rerun_workload(ADVERSARIAL, target="cpu",
                                 protocol=protocol_document("smoke", "cpu", budget_seconds=1))
    return {result.implementation.name: result.as_document() for result in results}


def test_policy_is_a_serializable_document_with_text():
    policy = correctness.policy_document(3)
    assert json.loads(json.dumps(policy)) == policy
    assert policy["tolerances"]["fp32"] < 8.4e-4 < policy["tolerances"]["tf32"]
    assert policy["seeds"] == [2000, 2001, 2002]
    assert "TF32" in correctness.POLICY_TEXT and "8.4e-4" in correctness.POLICY_TEXT


def test_tf32_is_judged_by_its_own_row_only_when_declared():
    assert tolerance_for("fp32", uses_tf32=False) == correctness.TOLERANCES["fp32"]
    assert tolerance_for("fp32", uses_tf32=True) == correctness.TOLERANCES["tf32"]
    assert tolerance_for("bf16", uses_tf32=True) == correctness.TOLERANCES["bf16"]


def test_an_output_that_is_exactly_zero_is_judged_by_its_absolute_error():
    expected = {"output": torch.ones(100, dtype=torch.float64),
                "grad_bias": torch.full((10,), 1e-18, dtype=torch.float64)}
    outputs = {"output": torch.ones(100), "grad_bias": torch.full((10,), 1e-8)}
    errors = POLICY.errors(check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch.float32))
    assert errors["output"] == 0
    assert errors["grad_bias"] == pytest.approx(1e-8 / 1e-3, rel=1e-6)  # no peers: the floor of all outputs


def expected_and_inputs():
    x = torch.randn(4, 4)
    return {"output": (x * 2).double()}, {"x": x}


def test_a_correct_output_passes_with_its_error():
    expected, inputs = expected_and_inputs()
    output = {"output": (inputs["x"] * 2)}
    figures = check_trial(output, correctness.snapshot(output), expected, inputs, torch.float32)
    assert list(figures) == ["output"] and figures["output"].reference.shape == (4, 4)
    assert POLICY.errors(figures)["output"] < 1e-7


@pytest.mark.parametrize("tamper, message", [
    (lambda out, x: {}, "returned no 'output'"),
    (lambda out, x: {"output": out.half()}, "torch.float16"),
    (lambda out, x: {"output": out[:2]}, "shape"),
    (lambda out, x: {"output": x}, "input tensors"),
    (lambda out, x: {"output": out.index_fill(0, torch.tensor([1]), float("nan"))}, "NaN or Inf"),
    (lambda out, x: {"output": out.index_fill(0, torch.tensor([1]), float("inf"))}, "NaN or Inf"),
])
def test_broken_outputs_fail(tamper, message):
    expected, inputs = expected_and_inputs()
    outputs = tamper(inputs["x"] * 2, inputs["x"])
    with pytest.raises(IncorrectOutput, match=message):
        check_trial(outputs, correctness.snapshot(outputs), expected, inputs, torch.float32)


def test_output_changed_after_return_fails():
    expected, inputs = expected_and_inputs()
    output = {"output": torch.full((4, 4), float("nan"))}
    early = correctness.snapshot(output)
    output["output"].copy_(inputs["x"] * 2)  # what a side stream finishing late looks like
    with pytest.raises(IncorrectOutput, match="changed after the call returned"):
        check_trial(output, early, expected, inputs, torch.float32)


def test_honest_implementation_passes_beside_the_adversaries(adversarial_results):
    honest = adversarial_results["torch"]
    assert honest["status"] == "passed"
    assert honest["timing"]["trials"] == 2 and honest["correctness"]["passed"]


@pytest.mark.parametrize("name, reason", [
    ("writes_nothing", r"NaN or Inf|relative L2 error"),
    ("cached_result", r"correctness trial 2: relative L2 error"),
    ("side_stream", r"NaN or Inf|relative L2 error|changed after the call returned|left a thread running"),
    ("reference_output", r"the reference's own output"),
    ("raises", r"RuntimeError: this kernel does not support the shape"),
    ("over_budget", r"exceeded its time budget of 1 s"),
    ("copies_inputs", r"correctness trial 1: relative L2 error .*; its outputs stayed the same while the trials' "
                      r"inputs changed: does its prepare_pass copy the workload's tensors\?"),
])
def test_adversarial_implementation_fails_correctness(adversarial_results, name, reason):
    result = adversarial_results[name]
    assert result["status"] == "failed"
    assert result["timing"] is None
    assert result["correctness"]["passed"] is False
    assert result["error"].startswith("correctness trial")
    assert re.search(reason, result["error"]), result["error"]


def test_every_run_records_its_measured_error(adversarial_results):
    assert adversarial_results["torch"]["correctness"]["relL2Error"] < 1e-6
    assert adversarial_results["cached_result"]["correctness"]["relL2Error"] > 0.1
    assert adversarial_results["raises"]["correctness"]["relL2Error"] is None


PRECISION = RerunRequest("squared_linear", "forward", {"rows": 256, "features": 64}, "fp32")


@pytest.fixture(scope="module")
def precision_results():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(TEST_PLUGINS / "precision"))
        results = rerun_workload(PRECISION, target="cpu", protocol=protocol_document("smoke", "cpu"))
    return {result.implementation.name: result.as_document() for result in results}


def test_the_precision_trial_sets_the_bits_tf32_drops_and_nothing_else():
    x = torch.tensor([1.0, -3.5, 0.0, 1e-3, 7.25e5])
    indices, probabilities = torch.arange(5), torch.randn(5).softmax(0)
    trial = correctness.trials_for(2, "fp32")[-1]
    assert trial.precision and trial.seed == correctness.CORRECTNESS_SEED_BASE + 2
    changed = trial.inputs({"x": x, "indices": indices, "p": probabilities}, constrained=("p",))
    bits = changed["x"].view(torch.int32)
    assert torch.equal(bits[x != 0] & 0x1FFF, torch.full((4,), correctness.PRECISION_TRIAL_LOW_BITS, dtype=torch.int32))
    assert torch.equal(bits & ~0x1FFF, x.view(torch.int32) & ~0x1FFF)  # sign, exponent and TF32 mantissa as drawn
    assert changed["x"][2] == 0 and changed["indices"] is indices and changed["p"] is probabilities
    assert [trial.precision for trial in correctness.trials_for(2, "bf16")] == [False, False]


def test_ieee_fp32_passes_the_precision_trial(precision_results):
    honest = precision_results["torch"]
    assert honest["status"] == "passed"
    assert honest["correctness"]["trials"] == 3  # the smoke protocol's two seeded trials, then the precision trial
    assert honest["correctness"]["relL2Error"] < 1e-6


def test_undeclared_tf32_products_pass_random_inputs_and_fail_the_precision_trial(precision_results):
    """Rounded to nearest, TF32 errors on random inputs cancel in a sum of squares; the precision trial's do not."""
    result = precision_results["tf32_undeclared"]
    errors = [figures / norms for figures, norms in zip(
        result["correctness"]["outputFigures"]["output"]["differenceNorms"],
        result["correctness"]["outputFigures"]["output"]["referenceNorms"])]
    assert max(errors[:2]) < correctness.TOLERANCES["fp32"] < errors[2] < correctness.TOLERANCES["tf32"]
    assert result["status"] == "failed" and result["integrity"]["violations"]
    assert re.match(r"correctness: integrity violation: declares IEEE fp32 arithmetic, but its error \S+ is that of "
                    r"tf32 arithmetic", result["error"]), result["error"]


def test_declared_tf32_is_held_to_the_tf32_row_in_the_precision_trial(precision_results):
    declared = precision_results["tf32_declared"]
    assert declared["status"] == "passed" and declared["correctness"]["tolerance"] == correctness.TOLERANCES["tf32"]
    assert correctness.TOLERANCES["fp32"] < declared["correctness"]["relL2Error"] < correctness.TOLERANCES["tf32"]


def test_the_policy_document_describes_the_precision_trial():
    trial = correctness.policy_document(3)["precisionTrial"]
    assert trial["dtypes"] == ["fp32"] and trial["seed"] == 2003 and trial["lowBits"] == "0x0fff"
    assert "precision trial" in correctness.POLICY_TEXT
