"""Versions 2 and 3 of the correctness policy: near-zero and small outputs, and re-judging stored runs without a GPU."""

import json
import math
import random
from pathlib import Path

import pytest

from runners import correctness, discovery
from runners.correctness import POLICY, TOLERANCES, OutputFigures, Policy, Reference, references_of, rejudge
from runners.discovery import get_registry
from runners.rerun import RerunRequest, _PluginCalls, rerun_workload
from runners.timing import protocol_document

REPOSITORY = Path(__file__).resolve().parents[1]
TEST_PLUGINS = REPOSITORY / "tests" / "plugins"
FNA_BUNDLE = REPOSITORY / "benchmarks" / "results" / "h200" / "h200-fna-backward-full.jsonl"
BUNDLED = [json.loads(line) for path in sorted((REPOSITORY / "benchmarks" / "results" / "h200").glob("*.jsonl"))
           for line in path.read_text().splitlines()]
COMMITTED = [result for result in BUNDLED if result["correctness"]["policy"]["version"] == 1]
"""The bundles judged under version 1, before this version existed."""
VERSION_1 = Policy.from_document(COMMITTED[0]["correctness"]["policy"])
VERSION_2 = Policy(2, TOLERANCES, 1e-3, 1e-2)
BIAS = (512,)


def figures(*outputs):
    """One trial's figures from (name, shape, reference RMS, difference RMS)."""
    return {name: OutputFigures(Reference(shape, rms * math.sqrt(math.prod(shape))),
                                difference * math.sqrt(math.prod(shape)))
            for name, shape, rms, difference in outputs}


# ----------------------------------------------------------------------------- the rule


def test_a_cancelling_output_is_judged_against_its_peers_at_one_percent():
    """Liger's key-bias gradient on the H200: exactly zero, off by 1.5e-5 of its largest peer's scale."""
    trial = figures(("grad_k_bias", BIAS, 0.0, 1.54e-5 * 44.76), ("grad_v_bias", BIAS, 26.04, 0.0),
                    ("grad_out_bias", BIAS, 44.76, 0.0), ("grad_hidden_states", (2, 1024, 512), 0.1436, 0.0))
    assert POLICY.errors(trial)["grad_k_bias"] == pytest.approx(1.54e-3)
    assert VERSION_1.errors(trial)["grad_k_bias"] == pytest.approx(1.54e-2)
    assert 1.54e-3 < TOLERANCES["tf32"] < 1.54e-2


@pytest.mark.parametrize("row", sorted(TOLERANCES))
def test_zeros_for_a_gradient_a_thousandth_of_its_peers_fail_every_row(row):
    trial = figures(("grad_damped_bias", BIAS, 1e-3, 1e-3), ("grad_v_bias", BIAS, 1.0, 0.0))
    error = POLICY.errors(trial)["grad_damped_bias"]
    assert error == pytest.approx(0.1) and error > 4 * POLICY.tolerances[row]


def test_an_output_far_from_zero_is_held_to_its_own_norm():
    trial = figures(("grad_q_bias", BIAS, 3.13, 3.13 * 4e-3), ("grad_out_bias", BIAS, 44.76, 0.0))
    assert POLICY.errors(trial)["grad_q_bias"] == pytest.approx(4e-3)


def test_peers_share_kind_and_shape():
    """A forward output is no gradient's peer, and outputs of other shapes are not peers: the output, a millionth of
    the gradients, is judged by the largest output's floor, capped at ten times its own norm."""
    trial = figures(("output", (64, 32), 1e-6, 1e-9), ("grad_x", (64, 32), 1.0, 0.0), ("grad_bias", (32,), 1.0, 0.0))
    references = {name: output.reference for name, output in trial.items()}
    assert VERSION_2.denominators(references)["output"] == pytest.approx(POLICY.norm_floor * 1.0 * math.sqrt(64 * 32))
    assert POLICY.denominators(references)["output"] == pytest.approx(10 * 1e-6 * math.sqrt(64 * 32))


def random_trials(seed, count=200):
    rng = random.Random(seed)
    for _ in range(count):
        yield figures(*((f"grad_{index}", rng.choice([(4,), (8,)]), rng.choice([0.0, 10 ** rng.uniform(-8, 2)]),
                         rng.random()) for index in range(5)))


def test_version_2_never_scores_above_version_1():
    for trial in random_trials(7):
        new, old = VERSION_2.errors(trial), VERSION_1.errors(trial)
        assert all(new[name] <= old[name] for name in trial)


def test_version_3_never_scores_below_version_2():
    """Version 3 only caps a floor: no version 2 failure becomes a pass."""
    for trial in random_trials(8):
        new, old = POLICY.errors(trial), VERSION_2.errors(trial)
        assert all(new[name] >= old[name] for name in trial)


def test_zeros_for_a_gradient_small_by_nature_fail_every_row():
    """Multi-token attention at 16 heads, L 2048: the scores gradient (RMS 1e-3) beside the bias gradient, a sum over
    every position (RMS 1,862). Version 2 scored all zeros 5.4e-4, inside the TF32 row."""
    trial = figures(("grad_scores", (2, 16, 2048, 2048), 1.0e-3, 1.0e-3), ("grad_bias", (16,), 1862.0, 0.0),
                    ("grad_weight", (16, 16, 3, 3), 40.0, 0.0))
    assert VERSION_2.errors(trial)["grad_scores"] == pytest.approx(5.4e-4, rel=0.01)
    assert POLICY.errors(trial)["grad_scores"] == pytest.approx(0.1)
    assert all(POLICY.errors(trial)["grad_scores"] > 4 * tolerance for tolerance in TOLERANCES.values())


def test_the_cap_leaves_an_ill_conditioned_outputs_honest_rounding_passing():
    """Sparse multi-token attention's fp32 scores gradient: 1.7e-5 of the bias gradient's scale, and torch's IEEE
    fp32 7.2e-4 of its own norm from float64 (sparsemax's support moves with rounding): within the fp32 row."""
    trial = figures(("grad_scores", (2, 4, 1024, 1024), 1.7e-5, 7.2e-4 * 1.7e-5), ("grad_bias", (4,), 1.0, 0.0))
    assert POLICY.errors(trial)["grad_scores"] == pytest.approx(7.2e-5)
    assert POLICY.errors(trial)["grad_scores"] <= TOLERANCES["fp32"]


def test_an_output_zero_in_float64_without_peers_keeps_the_whole_floor():
    """No scale of its own to cap the floor at: rounding noise is judged against the pass's largest output."""
    trial = figures(("grad_shift", (8,), 0.0, 1e-6), ("grad_x", (64, 32), 1.0, 0.0))
    assert POLICY.errors(trial)["grad_shift"] == pytest.approx(1e-6 / POLICY.norm_floor)


def test_policy_document_is_version_3_and_reads_back():
    document = correctness.policy_document(3)
    assert (document["version"], document["peerFloor"], document["ownScaleCap"], document["zeroScale"]) == \
        (3, 1e-2, 10.0, 1e-12)
    assert Policy.from_document(document) == POLICY
    assert Policy.from_document({**document, "version": 2, "ownScaleCap": None} | {}) != POLICY
    assert VERSION_1 == Policy(1, TOLERANCES, 1e-3, 0.0)
    stored_version_2 = {key: value for key, value in document.items() if key not in ("ownScaleCap", "zeroScale")}
    assert Policy.from_document({**stored_version_2, "version": 2}) == VERSION_2
    assert "min(1e-3 * S * sqrt(n), 10 * ||reference||)" in correctness.POLICY_TEXT


def test_a_nan_error_fails_wherever_it_stands_among_the_outputs():
    """NaN compares false with everything, so ``error > tolerance`` and ``max`` would both pass it by."""
    for outputs in ([("grad_a", BIAS, 1.0, 0.0), ("grad_b", BIAS, math.nan, 0.0)],
                    [("grad_b", BIAS, math.nan, 0.0), ("grad_a", BIAS, 1.0, 1e-6)]):
        trial = figures(*outputs)
        assert correctness.worst_output(POLICY.errors(trial)) == "grad_b"
        record = correctness.CorrectnessRecord(tolerance=1e-4, trials=1, uses_tf32=False, figures=[trial])
        assert not record.passed and "relative L2 error nan of grad_b" in record.tolerance_failure()


def test_a_reference_that_is_not_finite_judges_nothing():
    import torch

    expected = {"output": torch.tensor([1.0, math.nan, math.inf], dtype=torch.float64)}
    outputs = {"output": torch.zeros(3)}
    with pytest.raises(correctness.IncorrectOutput, match="the reference's output has 2 NaN or Inf values of 3: the "
                                                          "family's reference_outputs hook is broken"):
        correctness.check_trial(outputs, correctness.snapshot(outputs), expected, {}, torch.float32)


# ----------------------------------------------------------------------------- through the harness


@pytest.fixture(scope="module")
def attention_bias_results():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(TEST_PLUGINS))
        results = rerun_workload(RerunRequest("adversarial_attention_bias", "backward", {"rows": 64, "features": 32},
                                              "fp32"),
                                 target="cpu", protocol=protocol_document("smoke", "cpu", budget_seconds=5))
    return {result.implementation.name: result.as_document() for result in results}


def test_honest_and_tf32_noise_on_a_zero_gradient_pass(attention_bias_results):
    for name in ("torch", "noisy_key_bias"):
        assert attention_bias_results[name]["status"] == "passed", attention_bias_results[name]["error"]
    noisy = attention_bias_results["noisy_key_bias"]
    assert noisy["correctness"]["outputErrors"]["grad_k_bias"] == pytest.approx(1.5e-3, rel=0.05)
    assert rejudge(noisy, VERSION_1).status == "failed"  # what version 1 made of it


def test_zeros_for_a_small_gradient_are_caught(attention_bias_results):
    result = attention_bias_results["zeroes_damped_gradient"]
    assert result["status"] == "failed" and result["timing"] is None
    assert result["error"] == ("correctness trial 1: relative L2 error 0.1 of grad_damped_bias exceeds the "
                               "0.005 tolerance")
    assert rejudge(result, VERSION_1).status == "failed"


def test_zeros_for_a_gradient_small_by_nature_are_caught_through_the_harness(monkeypatch):
    """``output = 1e-6 * x + bias``: the input's gradient is 1e-7 of the bias's scale, zeros declared as TF32."""
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(TEST_PLUGINS))
    results = {result.implementation.name: result.as_document() for result in rerun_workload(
        RerunRequest("adversarial_small_gradient", "backward", {"rows": 64, "features": 32}, "fp32"),
        target="cpu", protocol=protocol_document("smoke", "cpu", budget_seconds=5))}
    assert results["torch"]["status"] == "passed", results["torch"]["error"]
    zeros = results["zeroes_small_gradient"]
    assert zeros["status"] == "failed" and zeros["error"] == (
        "correctness trial 1: relative L2 error 0.1 of grad_x exceeds the 0.005 tolerance")
    assert rejudge(zeros, VERSION_2).status == "passed"  # what version 2 made of it: 1.3e-4
    assert rejudge(zeros, VERSION_2).errors["grad_x"][1] < 2e-4


def test_records_keep_every_trials_figures_even_past_the_tolerance(attention_bias_results):
    check = attention_bias_results["zeroes_damped_gradient"]["correctness"]
    damped = check["outputFigures"]["grad_damped_bias"]
    # the smoke protocol's two seeded trials and the fp32 precision trial
    assert damped["shape"] == [32] and len(damped["referenceNorms"]) == len(damped["differenceNorms"]) == 3
    assert damped["differenceNorms"] == pytest.approx(damped["referenceNorms"])  # all zeros: off by everything


@pytest.mark.parametrize("name", ["torch", "noisy_key_bias", "zeroes_damped_gradient"])
def test_a_version_2_record_rejudged_under_its_own_version_agrees(attention_bias_results, name):
    result = attention_bias_results[name]
    verdict = rejudge(result)
    assert verdict.status == result["status"] and verdict.trials_recorded == verdict.trials == 3
    assert {output: high for output, (_, high) in verdict.errors.items()} == result["correctness"]["outputErrors"]


# ----------------------------------------------------------------------------- committed version 1 bundles


@pytest.mark.parametrize("index", range(len(COMMITTED)))
def test_every_committed_verdict_is_reproduced_under_version_1(index):
    result = COMMITTED[index]
    assert rejudge(result, VERSION_1).status == result["status"]


def scores_gradient_46_percent_off(result):
    """Our bf16 multi-token attention backward at L 777 of 9758868, whose scores gradient was 0.46 of its norm off."""
    return (result["family"], result["pass"], result["implementation"]["name"], result["workload"]["dtype"]) == \
        ("multi_token_attention", "backward", "kernelindex_triton", "bf16") and \
        result["workload"]["parameters"]["seq"] == 777 and result["implementation"]["revision"].startswith("97588683")


def test_every_committed_pass_with_figures_still_passes_but_the_one_version_3_exists_for():
    passed = [result for result in BUNDLED if result["status"] == "passed" and "outputFigures" in result["correctness"]]
    assert {result["implementation"]["name"] for result in passed} >= {"kernelindex_triton", "torch", "liger"}
    [wrong] = [result for result in passed if scores_gradient_46_percent_off(result)]
    assert rejudge(wrong, VERSION_2).status == "passed"
    verdict = rejudge(wrong)
    assert verdict.status == "failed" and verdict.errors["grad_scores"][0] == pytest.approx(0.046, rel=0.01)
    assert all(rejudge(result).status == "passed" for result in passed if result is not wrong)


def test_a_version_1_pass_is_undetermined_at_worst():
    """Version 1 records hold only worst errors; where the cap may lower a denominator nothing bounds the error, and
    a pass of one output is exact."""
    verdicts = [(result, rejudge(result)) for result in COMMITTED if result["status"] == "passed"]
    assert {verdict.status for _, verdict in verdicts} == {"passed", "undetermined"}
    assert all(verdict.status == "passed" for result, verdict in verdicts if len(result["correctness"]["outputErrors"]) == 1)


def liger_fna(pass_):
    return next(json.loads(line) for line in FNA_BUNDLE.read_text().splitlines()
                if '"name": "liger"' in line and f'"pass": "{pass_}"' in line)


def fna_references(result):
    """The float64 reference figures of the recorded trials, computed again on a CPU from the recorded seeds."""
    registry = get_registry()
    workload = result["workload"]
    request = RerunRequest(result["family"], result["pass"], workload["parameters"], workload["dtype"],
                           workload["options"])
    calls = _PluginCalls(registry, registry.find(result["family"], "cpu"), request, "cpu")
    seed = result["correctness"]["policy"]["seeds"][0]  # Liger stopped after trial 1
    expected = calls.call("reference_outputs", workload=calls.workload(seed), pass_=result["pass"])
    return [references_of({name: tensor.detach() for name, tensor in expected.items()})]


@pytest.mark.parametrize("pass_", ["backward", "full"])
def test_liger_fna_stored_errors_are_settled_by_references(pass_):
    result = liger_fna(pass_)
    assert result["status"] == "failed" and result["correctness"]["outputErrors"]["grad_k_bias"] > 1.5e-2

    unsettled = rejudge(result)
    low, high = unsettled.errors["grad_k_bias"]
    assert unsettled.status == "undetermined" and low == pytest.approx(1.54e-3, rel=1e-2) and high == math.inf
    assert any(reason.startswith("grad_k_bias: its stored error 0.0154 does not settle it")
               for reason in unsettled.reasons)

    verdict = rejudge(result, references=fna_references(result))
    low, high = verdict.errors["grad_k_bias"]
    assert low == high == pytest.approx(1.54e-3, rel=1e-2)
    assert verdict.within_tolerance and max(high for _, high in verdict.errors.values()) < 1.6e-3
    assert (verdict.trials_recorded, verdict.trials) == (1, 3)
    assert verdict.status == "undetermined"  # trials 2 and 3 were never run: only a rerun can pass it
    assert verdict.reasons == ("the record covers 1 of 3 trials: version 1 stopped checking at the first one over "
                               "its tolerance",)


# ----------------------------------------------------------------------------- version 1 records of every kind


def version_1_record(status, errors, error=None, tf32=False):
    policy = dict(COMMITTED[0]["correctness"]["policy"])
    return {"status": status, "error": error, "workload": {"dtype": "fp32"},
            "correctness": {"policy": policy, "passed": status == "passed", "outputErrors": errors,
                            "trials": policy["trials"], "tf32": tf32}}


def test_a_record_that_broke_the_policy_outright_stays_failed():
    verdict = rejudge(version_1_record("failed", {"output": 1e-7},
                                       "correctness trial 2: output has 3 NaN or Inf values of 16"))
    assert verdict.status == "failed" and "NaN or Inf" in verdict.reasons[0]
    assert rejudge(version_1_record("failed", {}, "correctness trial 1: RuntimeError: no")).status == "failed"


def test_an_error_far_over_the_tolerance_fails_without_references():
    """No floor of a later version is more than ten times version 1's, so 0.1 stays above 5e-3."""
    verdict = rejudge(version_1_record("failed", {"grad_x": 0.1, "grad_bias": 1e-6}, "correctness trial 3: relative "
                                       "L2 error 0.1 of grad_x exceeds the 0.005 tolerance", tf32=True))
    assert verdict.status == "failed" and verdict.errors["grad_x"][0] == pytest.approx(0.01)


def test_a_pass_of_one_output_is_judged_exactly_from_its_worst_error():
    """The one output is the pass's largest: its own norm is its denominator under every version."""
    verdict = rejudge(version_1_record("failed", {"output": 0.1}, "correctness trial 3: relative L2 error 0.1 of "
                                       "output exceeds the 0.005 tolerance", tf32=True))
    assert verdict.status == "failed" and verdict.errors["output"] == (0.1, 0.1)


def test_references_must_cover_the_recorded_trials():
    result = version_1_record("passed", {"grad_x": 1e-5})
    with pytest.raises(ValueError, match="holds 3 trials; references were given for 1"):
        rejudge(result, references=[{"grad_x": Reference((4,), 1.0)}])


def test_a_verdict_is_a_json_document():
    document = rejudge(liger_fna("backward")).as_document()
    assert json.loads(json.dumps(document)) == document
    assert document["status"] == "undetermined" and document["policyVersion"] == 3
    assert document["errors"]["grad_k_bias"]["high"] is None  # the cap may have lowered the denominator: unbounded
