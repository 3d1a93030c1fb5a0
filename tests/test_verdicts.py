"""Re-judging stored reruns without a GPU (``flask rejudge``), and what the run page says of both verdicts."""

import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from app import db
from app.importers.kernelindex_rerun import record_rerun_results
from app.models import Manifest, Rejudgement, Run
from app.verdicts import rejudgeable
from runners.correctness import POLICY_TEXT, policy_document

from .conftest import POSTGRES
from .factories import rerun_result
from .pages_support import in_order, reference_run, text_of

FNA_BUNDLE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200" / "h200-fna-backward-full.jsonl"
POSTGRESQL_MOST_PARAMETERS = 65_535  # a statement's bound parameters


def liger_fna_backward() -> dict:
    """Liger's FNA backward on the H200, failed under policy version 1 for noise on a zero gradient (issue 17)."""
    line = next(line for line in FNA_BUNDLE.read_text().splitlines()
                if '"name": "liger"' in line and '"pass": "backward"' in line)
    return {**json.loads(line), "rerunOf": None}


def record(app, *results) -> list[Run]:
    with app.app_context():
        return [Run.get_by_id(run_id) for run_id in record_rerun_results(list(results), families={}).created]


def test_rejudge_stores_the_new_verdict_beside_the_recorded_one(app, runner):
    [liger] = record(app, liger_fna_backward())
    result = runner.invoke(args=["rejudge"])
    assert result.exit_code == 0, result.output
    assert f"{liger.id} fused_neighborhood_attention/backward/liger: failed as recorded; under version 3 " \
           "undetermined (grad_hidden_states: its stored error 0.000988 does not settle it" in result.output
    assert "grad_k_bias: its stored error 0.0154 does not settle it" in result.output
    assert "rejudged 1 rerun(s) under policy version 3: 0 passed, 0 failed, 1 undetermined; 0 already" in result.output
    with app.app_context():
        run = Run.get_by_id(liger.id)
        assert (run.status, run.rank, run.digest) == ("failed", None, liger.digest)  # the recorded verdict stays
        rejudgement = Rejudgement.get(Rejudgement.run == run)
        assert (rejudgement.policy_version, rejudgement.status) == (3, "undetermined")
        assert rejudgement.verdict["trialsRecorded"] == 1 and rejudgement.verdict["trials"] == 3
        policy = Manifest.get_by_id(rejudgement.policy_digest).document
        assert policy["kind"] == "CorrectnessPolicy" and policy["spec"]["policy"]["version"] == 3
    again = runner.invoke(args=["rejudge", liger.id])
    assert "rejudged 0 rerun(s)" in again.output and "1 already judged under it" in again.output


@pytest.mark.skipif(not POSTGRES, reason="KERNELINDEX_TEST_POSTGRES is not set (SQLite writers take turns)")
def test_two_rejudges_at_once_store_one_verdict_and_count_it_once(app, monkeypatch):
    """Two ``flask rejudge`` at once both found the run not judged yet, both judged it and both counted it (the
    database kept one verdict): four at once said they rejudged 1,940 runs of 715. Each is held once it has checked
    until the other has checked too, or waits for the first's lock on the run."""
    from app import verdicts

    from .test_concurrency import held_after

    [liger] = record(app, liger_fna_backward())
    monkeypatch.setattr(verdicts, "judged_under", held_after(verdicts.judged_under, arrived=[], others=1))
    start = threading.Barrier(2)

    def rejudge(_):
        with app.app_context():
            db.database.connect(reuse_if_open=True)
            try:
                start.wait(timeout=30)
                return verdicts.rejudge_runs([Run.get_by_id(liger.id)])
            finally:
                db.database.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        summaries = list(pool.map(rejudge, range(2)))
    assert sorted((len(summary.judged), summary.already) for summary in summaries) == [(0, 1), (1, 0)]
    with app.app_context():
        assert Rejudgement.select().where(Rejudgement.run == liger.id).count() == 1


def test_runs_judged_under_the_current_version_and_unreadable_records_are_left_alone(small_app, runner, monkeypatch):
    legacy = rerun_result(reference_run(small_app))  # as stored before versions and per-output errors were recorded
    legacy["correctness"] = {"policy": {"name": "kernelindex-correctness-v1", "tolerances": {"fp32": 0.002}},
                             "policyText": "Relative L2 error against float64.", "passed": True, "relL2Error": 1e-4,
                             "tolerance": 0.002, "trials": 3, "tf32": True}
    current = liger_fna_backward()
    current["correctness"] = {**current["correctness"], "policy": policy_document(3), "policyText": POLICY_TEXT}
    monkeypatch.setattr("app.importers.kernelindex_rerun.verdict_problem", lambda result: None)  # an older import
    old, _ = record(small_app, legacy, current)
    result = runner.invoke(args=["rejudge"])
    assert f"{old.id}: not re-judged: its correctness record lacks policy version, policy trials, outputErrors" in result.output
    assert "rejudged 0 rerun(s)" in result.output
    assert "1 already judged under it; 1 without the figures to judge" in result.output
    assert runner.invoke(args=["rejudge", "000000000000"]).exit_code == 1


def test_runs_named_to_rejudge_that_it_cannot_judge_say_why(small_app, runner):
    [rerun] = record(small_app, liger_fna_backward())
    with small_app.app_context():
        upstream = Run.select().where(Run.source != "kernelindex").first()
    cases = {(rerun.id, "--kernel", "multi_token_attention"):
             f"{rerun.id} is a rerun of fused_neighborhood_attention, not of multi_token_attention",
             (upstream.id,): f"{upstream.id} is no KernelIndex rerun (its source: {upstream.source})",
             ("000000000000",): "000000000000 is no run here"}
    for arguments, reason in cases.items():
        refused = runner.invoke(args=["rejudge", *arguments])
        assert refused.exit_code == 1 and f"Error: not rejudged: {reason}" in refused.output, refused.output


def test_more_runs_named_than_a_statement_may_bind_are_found_oldest_first(app):
    """``flask rejudge RUN_ID...`` may name more runs than PostgreSQL binds in one statement; SQLite is held to
    PostgreSQL's limit here (its own default is 32,766, but builds raise it)."""
    first, later = record(app, liger_fna_backward(), {**liger_fna_backward(), "observedAt": "2026-12-01T23:59:59Z"})
    named = [later.id, *(f"{n:012x}" for n in range(POSTGRESQL_MOST_PARAMETERS)), first.id]
    with app.app_context():
        if not POSTGRES:
            db.database.connection().setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, POSTGRESQL_MOST_PARAMETERS)
        assert [run.id for run in rejudgeable(named)] == [first.id, later.id]


def test_the_run_page_shows_both_verdicts(app, runner, client):
    [liger] = record(app, liger_fna_backward())
    runner.invoke(args=["rejudge"])
    text = text_of(client.get(f"/runs/{liger.id}").get_data(as_text=True))
    assert "Failed the KernelIndex correctness policy: relative L2 error 0.0154 against tolerance 0.005." in text
    assert "Judged failed under policy v1 (digest sha256:876931bb02dba038…); under policy v3: undetermined — " \
           "grad_hidden_states: its stored error 0.000988 does not settle it" in text
    assert "grad_k_bias: its stored error 0.0154 does not settle it" in text
    assert "the record covers 1 of 3 trials" in text and "It still does not rank" not in text
    [verdict] = client.get(f"/runs/{liger.id}.json").get_json()["correctness"]["rejudgements"]
    assert verdict["status"] == "undetermined" and verdict["policy_version"] == 3 and verdict["ranking"] is None


def test_a_failed_rerun_passed_by_a_later_version_still_does_not_rank(app, client):
    [liger] = record(app, liger_fna_backward())
    with app.app_context():
        Rejudgement.create(run=liger, policy_version=3, policy_digest="sha256:" + "0" * 64, status="passed",
                           verdict={"reasons": []})
    text = text_of(client.get(f"/runs/{liger.id}").get_data(as_text=True))
    assert "under policy v3: passed. It still does not rank: the harness stopped at the failed trial and timed " \
           "nothing, so the run has no median" in text
    assert "Not ranked: the run failed" in text


def test_every_rerun_list_names_its_gpu_against_the_reproduced_run(small_app, client):
    source = reference_run(small_app)  # an H100 80GB HBM3
    h200 = rerun_result(source)
    same_gpu = rerun_result(source, host="h100-a", observed_at="2026-11-29T11:00:00Z")
    same_gpu["environment"]["hardware"] = {"vendor": "nvidia", "product": "NVIDIA H100", "name": source.gpu}
    h200_run, h100_run = record(small_app, h200, same_gpu)
    source_text = text_of(client.get(f"/runs/{source.id}").get_data(as_text=True))
    assert in_order(source_text, "KernelIndex reruns", f"run {h100_run.id}",
                    f": 80 µs · KernelIndex rerun · rerun on {source.gpu}, the GPU of this run · host h100-a",
                    f"run {h200_run.id}",
                    ": 80 µs · KernelIndex rerun · rerun on NVIDIA H200, not the H100 of this run")
    rerun_text = text_of(client.get(f"/runs/{h200_run.id}").get_data(as_text=True))
    assert "rerun on NVIDIA H200, not the H100 of that run" in rerun_text
    twin = client.get(f"/runs/{source.id}.json").get_json()
    assert {entry["gpu"] for entry in twin["reruns"]} == {"NVIDIA H200", source.gpu}


def test_a_record_that_cannot_be_judged_is_reported_and_the_rest_judged(small_app, runner):
    """A record stored before its figures were checked (a null error) does not stop ``flask rejudge``, which
    ``make serve`` runs before serving; the other runs are judged."""
    again = {**liger_fna_backward(), "observedAt": "2026-12-01T23:59:59Z"}  # the same run measured again later
    liger, other = record(small_app, liger_fna_backward(), again)
    with small_app.app_context():
        details = Run.get_by_id(liger.id).details
        details["correctness"]["outputErrors"] = {name: None for name in details["correctness"]["outputErrors"]}
        Run.update(details=details).where(Run.id == liger.id).execute()
    result = runner.invoke(args=["rejudge"])
    assert result.exit_code == 0, result.output
    assert f"{liger.id}: not re-judged: its correctness record cannot be judged (TypeError(" in result.output
    assert "rejudged 1 rerun(s)" in result.output


def test_an_fp32_rerun_judged_under_the_current_version_is_not_judged_again(app, runner):
    """An fp32 record counts the precision trial among its trials, one more than its policy's seeded trials: the
    current policy rebuilt from the record's count had another digest, so every fresh fp32 rerun was re-judged
    under the version it was judged under, and its page showed a second verdict."""
    current = liger_fna_backward()
    assert current["workload"]["dtype"] == "fp32"
    current["correctness"] = {**current["correctness"], "policy": policy_document(2), "policyText": POLICY_TEXT,
                              "trials": 3}
    [run] = record(app, current)
    result = runner.invoke(args=["rejudge", run.id])
    assert result.exit_code == 0, result.output
    assert "rejudged 0 rerun(s)" in result.output and "1 already judged under it" in result.output
    with app.app_context():
        assert not Rejudgement.select().where(Rejudgement.run == run.id).exists()


def test_runs_named_to_rejudge_past_the_first_twenty_that_it_cannot_judge_are_counted(small_app, runner):
    """Each is said why with a query of its own: 70,000 unknown ids took a minute and printed two megabytes."""
    unknown = [f"{number:012x}" for number in range(25)]
    refused = runner.invoke(args=["rejudge", *unknown])
    assert refused.exit_code == 1 and refused.output.count("is no run here") == 20, refused.output
    assert refused.output.rstrip().endswith("; and 5 more not rejudgeable"), refused.output
