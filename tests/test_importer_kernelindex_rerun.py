"""Recording KernelIndex reruns: evidence, links, ranking among reruns, replication, bundles and the API."""

import codecs
import json
import re
from pathlib import Path

import pytest

from app.models import Manifest, Run
from app.importers.kernelindex_rerun import RerunRejected, record_rerun_results

from .factories import correctness_record, harness_cost, memory_result, rerun_result, stamp
from .pages_support import reference_run

REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.fixture
def reference(small_app):
    with small_app.app_context():
        yield reference_run(small_app)


def test_rerun_is_linked_and_ranks_among_reruns(app, reference):
    summary = record_rerun_results([rerun_result(reference, "torch", median=88_800_000.0),
                                    rerun_result(reference, "kernelindex_triton", median=80_000.0)])
    assert len(summary.created) == 2
    fast, slow = (Run.get_by_id(i) for i in sorted(summary.created, key=lambda i: Run.get_by_id(i).median))
    assert fast.evidence == slow.evidence == "kernelindex-rerun"
    assert fast.rerun_of_id == reference.id and {r.id for r in reference.reruns} == {fast.id, slow.id}
    assert fast.comparison_key_id == slow.comparison_key_id != reference.comparison_key_id
    assert (fast.rank, slow.rank, fast.comparison_key.size) == (1, 2, 2)
    assert fast.workload_key == reference.workload_key
    reference = Run.get_by_id(reference.id)
    assert (reference.rank, reference.evidence) == (2, "source-reported")  # the source ranking is untouched
    run_doc = Manifest.get_by_id(fast.digest).document
    assert run_doc["spec"]["rerun"]["of"] == reference.digest
    policy = Manifest.get_by_id(run_doc["spec"]["correctness"]["policyDigest"])
    assert policy.kind == "CorrectnessPolicy"


def test_smoke_reruns_never_rank_beside_standard_ones(app, reference):
    standard = record_rerun_results([rerun_result(reference, median=80_000.0)]).created[0]
    smoke = record_rerun_results([rerun_result(reference, "torch", median=70_000.0, preset="smoke")]).created[0]
    assert Run.get_by_id(standard).comparison_key_id != Run.get_by_id(smoke).comparison_key_id
    assert Run.get_by_id(standard).rank == Run.get_by_id(smoke).rank == 1


def test_a_later_smoke_rerun_leaves_the_standard_one_ranked(app, reference):
    """One host's smoke rerun is the same measurement under a protocol that ranks apart: it superseded the host's
    standard rerun, which left the standard ranking with nothing there to replace it."""
    standard = record_rerun_results([rerun_result(reference, median=80_000.0)]).created[0]
    later = rerun_result(reference, median=70_000.0, observed_at="2026-11-30T10:00:00Z", preset="smoke")
    smoke = record_rerun_results([later]).created[0]
    standard, smoke = Run.get_by_id(standard), Run.get_by_id(smoke)
    assert standard.superseded_by_id is smoke.superseded_by_id is None
    assert (standard.rank, standard.comparison_key.size) == (1, 1)


def test_samples_that_waited_on_the_host_are_kept_and_shown(app, reference, client):
    synchronising = rerun_result(reference, "torch", median=600_000.0)
    synchronising["timing"]["hostExposedSamples"] = 20
    queued = rerun_result(reference, median=45_000.0)  # a bundle from before the field existed
    created = record_rerun_results([synchronising, queued]).created
    shown = {}
    for run_id in created:
        run = Run.get_by_id(run_id)
        shown[run.implementation] = (Manifest.get_by_id(run.digest).document["spec"]["rerun"]["hostExposedSamples"],
                                        "samples waited on the host" in client.get(f"/runs/{run_id}").get_data(True))
    assert shown == {"torch": (20, True), "kernelindex_triton": (0, False)}


def test_results_with_the_fair_comparison_fields_are_recorded(app, reference):
    """A result of issue 17's harness (math mode, host-inclusive figure, synchronization check) imports; the
    fields are kept in the run's details."""
    result = rerun_result(reference, "torch+tf32", median=90_000.0)
    result["implementation"]["mathMode"] = "tf32"
    result["timing"]["hostInclusive"] = {"median": 250_000.0, "p20": 240_000.0, "p80": 260_000.0, "samples": 20}
    result["timing"]["hostSynchronization"] = {"detected": False, "detail": None}
    [created] = record_rerun_results([result]).created
    details = Run.get_by_id(created).details
    assert details["implementation"]["mathMode"] == "tf32"
    assert details["timing"]["hostInclusive"]["median"] == 250_000.0
    assert details["timing"]["hostSynchronization"] == {"detected": False, "detail": None}


@pytest.mark.parametrize("details", [{}, {"tf32": True}])
def test_a_result_judged_in_another_precision_than_it_declares_is_refused(app, reference, details):
    """An fp32 result whose implementation multiplies in IEEE fp32, as its page says, passed at 1e-3 under the TF32
    row of the policy (5e-3) because its correctness record (and its details) said tf32: 10 times the fp32
    tolerance."""
    result = rerun_result(reference, "torch", median=90_000.0)
    result["implementation"] = {**result["implementation"], "details": details, "mathMode": "ieee-fp32"}
    result["correctness"] = correctness_record(error=1e-3)
    with pytest.raises(RerunRejected, match="tf32"):
        record_rerun_results([result])
    assert not Run.select().where(Run.source == "kernelindex").exists()


def test_failed_correctness_is_recorded_without_timing(app, reference):
    summary = record_rerun_results([rerun_result(reference, "torch_compile", status="failed")])
    failed = Run.get_by_id(summary.created[0])
    assert failed.status == "failed" and failed.median is None and failed.rank is None
    assert "tolerance" in failed.details["error"]


def test_agreeing_hosts_replicate(app, reference):
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")])
    summary = record_rerun_results([rerun_result(reference, median=80_500.0, host="h200-b",
                                                 observed_at="2026-11-29T11:00:00Z")])
    assert summary.replicated == 2
    assert {r.evidence for r in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-replicated"}


@pytest.mark.parametrize("order", [("a", "b", "c"), ("b", "a", "c"), ("c", "a", "b")])
def test_whether_hosts_agree_does_not_depend_on_the_order_they_posted_in(app, reference, order):
    """b is within 2% of a, and a of c, but b is 3.8% slower than c: judged against whichever rerun the database
    listed first, the three replicated when a came first and not otherwise."""
    medians = {"a": 100_000.0, "b": 101_900.0, "c": 98_200.0}
    for hour, host in enumerate(order, start=10):
        record_rerun_results([rerun_result(reference, median=medians[host], host=host, spread=0.001,
                                           observed_at=f"2026-11-29T{hour}:00:00Z")])
    assert {r.evidence for r in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-rerun"}


def test_a_smoke_rerun_never_replicates_a_standard_one(app, reference):
    """Replication is of one measurement under one comparability family: two agreeing hosts, one of them under the
    smoke protocol, made both results replicated."""
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")])
    smoke = rerun_result(reference, median=80_500.0, host="h200-b", observed_at="2026-11-29T11:00:00Z",
                         preset="smoke")
    assert record_rerun_results([smoke]).replicated == 0
    assert {r.evidence for r in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-rerun"}


def test_one_measurement_recorded_for_two_hosts_does_not_replicate(app, reference):
    """The same bundle imported again under another host name is one measurement, not two that agree."""
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")])
    summary = record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-b")])
    assert summary.replicated == 0
    assert {r.evidence for r in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-rerun"}


@pytest.mark.parametrize("version", [99, 0, "5", 5.0])
def test_a_protocol_version_never_published_is_refused(app, reference, version):
    result = rerun_result(reference)
    result["protocol"]["version"] = version
    with pytest.raises(RerunRejected, match="version"):
        record_rerun_results([result])


@pytest.mark.parametrize("part, field, value", [
    ("protocol", "budgetSeconds", "x"), ("protocol", "budgetSeconds", "60"), ("protocol", "inputSeeds", ["1"]),
    ("protocol", "statistics", [1]), ("protocol", "launchQueue", {"method": "delay", "minDelayNs": "5"}),
    ("protocol", "launchQueue", "x"), ("protocol", "warmupReps", 1.5),
    ("correctness", "relL2Error", "0.1"), ("correctness", "tolerance", True), ("correctness", "trials", "3"),
    ("correctness", "tf32", 1), ("correctness", "passed", "true"), ("correctness", "outputErrors", {"output": "0"}),
    ("correctness", "outputFigures", {"output": {"differenceNorms": [None], "referenceNorms": [1.0], "shape": [4]}}),
    ("correctness", "outputFigures", {"output": {"differenceNorms": [0.1], "referenceNorms": [1.0]}}),
])
def test_mistyped_fields_that_pages_and_rejudge_read_are_refused(app, reference, part, field, value):
    """Stored as posted, a string where a page formats a number made its run page answer 500 for good."""
    result = rerun_result(reference, status="failed")
    result[part][field] = value
    with pytest.raises(RerunRejected, match=field):
        record_rerun_results([result])
    assert not Run.select().where(Run.source == "kernelindex").exists()


def test_disagreeing_hosts_do_not_replicate(app, reference):
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a"),
                          rerun_result(reference, median=120_000.0, host="h200-b")])
    assert {r.evidence for r in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-rerun"}


def test_a_newer_rerun_on_the_same_host_supersedes(app, reference):
    first = record_rerun_results([rerun_result(reference, median=90_000.0)]).created[0]
    second = record_rerun_results([rerun_result(reference, median=80_000.0,
                                                observed_at="2026-11-30T10:00:00Z")]).created[0]
    assert Run.get_by_id(first).superseded_by_id == second


def test_invalid_results_store_nothing(app, reference):
    good = rerun_result(reference)
    bad = {**rerun_result(reference, "other"), "pass": "sideways"}
    with pytest.raises(RerunRejected, match="result 2"):
        record_rerun_results([good, bad])
    with pytest.raises(RerunRejected, match="not a run here"):
        record_rerun_results([{**good, "rerunOf": "ffffffffffff"}])
    assert Run.select().where(Run.source == "kernelindex").count() == 0


def test_bundle_import_is_idempotent(app, reference, runner, tmp_path):
    bundle = tmp_path / "results.jsonl"
    bundle.write_text("\n".join(json.dumps(rerun_result(reference, name, median=m))
                                for name, m in (("torch", 88e6), ("kernelindex_triton", 8e4))) + "\n")
    first = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert first.exit_code == 0 and "created 2, unchanged 0" in first.output
    again = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert "created 0, unchanged 2" in again.output
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"family": \n')
    result = runner.invoke(args=["import", "kernelindex", str(broken)])
    assert result.exit_code == 1 and "not JSON" in result.output
    broken.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    result = runner.invoke(args=["import", "kernelindex", str(broken)])
    assert result.exit_code == 1 and "nests too deeply" in result.output
    for content, message in ((b" \n\n", "the bundle holds no result"), (b"\xff\xfe{}", "not UTF-8 text"),
                             (b'{"median": ' + b"1" * 5000 + b"}\n", "line 1 holds an integer of more than 4300")):
        broken.write_bytes(content)
        result = runner.invoke(args=["import", "kernelindex", str(broken)])
        assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output


def test_a_bundle_line_naming_a_key_twice_is_refused_as_the_api_refuses_it(app, reference, runner, tmp_path):
    """json keeps the last of two values without a word: a result saying status "failed", then "passed", was
    imported as passed."""
    line = json.dumps(rerun_result(reference, "kernelindex_triton", median=8e4))
    assert line.endswith("}")
    bundle = tmp_path / "twice.jsonl"
    bundle.write_text(line[:-1] + ', "status": "passed"}\n')
    result = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert result.exit_code == 1, result.output
    assert "line 1 names the key 'status' twice in one object" in result.output
    assert Run.select().where(Run.source == "kernelindex").count() == 0


def test_a_bundle_or_a_posted_body_may_start_with_a_byte_order_mark(app, reference, runner, client, tmp_path):
    """As a Liger CSV may (test_importer_liger): Windows editors write one, and it is no part of the text."""
    bundle = tmp_path / "marked.jsonl"
    bundle.write_bytes(codecs.BOM_UTF8 + (json.dumps(rerun_result(reference, host="vm")) + "\n").encode())
    imported = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert imported.exit_code == 0 and "created 1, unchanged 0" in imported.output, imported.output
    token = runner.invoke(args=["tokens", "create", "h200-a"]).output.strip()
    body = codecs.BOM_UTF8 + json.dumps([rerun_result(reference, observed_at=stamp(-10))]).encode()
    posted = client.post("/api/v1/reruns", data=body, content_type="application/json",
                         headers={"Authorization": f"Bearer {token}"})
    assert posted.status_code == 201, posted.get_json()
    assert Run.select().where(Run.source == "kernelindex").count() == 2
    bundle.write_bytes(codecs.BOM_UTF8 + b'{"family": "caf\xe9"}\n')
    refused = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert refused.exit_code == 1 and "not UTF-8 text (invalid continuation byte at byte 18)" in refused.output


def test_api_requires_a_rerun_host_token(app, reference, runner, client):
    payload = [rerun_result(reference, observed_at=stamp(-10))]
    assert client.post("/api/v1/reruns", json=payload).status_code == 401
    assert client.post("/api/v1/reruns", json=payload, headers={"Authorization": "Bearer nope"}).status_code == 401
    token = runner.invoke(args=["tokens", "create", "h200-a"]).output.strip()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.post("/api/v1/reruns", json={"not": "a list"}, headers=headers).status_code == 400
    large_batch = [rerun_result(reference, observed_at=stamp(-10 - second)) for second in range(10)]
    assert len(json.dumps(large_batch)) > app.config["MAX_CONTENT_LENGTH"]  # the limit on posts from browsers
    response = client.post("/api/v1/reruns", json=large_batch, headers=headers)
    assert response.status_code == 201 and len(response.get_json()["created"]) == len(large_batch)
    runner.invoke(args=["tokens", "revoke", "h200-a"])
    assert client.post("/api/v1/reruns", json=payload, headers=headers).status_code == 401
    with app.app_context():
        assert Run.select().where(Run.source == "kernelindex").count() == len(large_batch)


def write_bundle(path, *results):
    path.write_text("".join(json.dumps(result) + "\n" for result in results))
    return str(path)


def test_a_local_import_records_the_host_its_operator_names(app, reference, runner, tmp_path):
    """Without --host each result keeps the host it names (the operator vouches for the file); --host overrides it."""
    bundle = write_bundle(tmp_path / "results.jsonl", rerun_result(reference, host="vm"))
    assert runner.invoke(args=["import", "kernelindex", bundle]).exit_code == 0
    assert runner.invoke(args=["import", "kernelindex", "--host", "h200-b", bundle]).exit_code == 0
    assert {run.host for run in Run.select().where(Run.source == "kernelindex")} == {"vm", "h200-b"}
    assert all(run.received_at for run in Run.select().where(Run.source == "kernelindex"))
    refused = runner.invoke(args=["import", "kernelindex", "--host", "bad\x00host", bundle])
    assert refused.exit_code == 2 and "printable" in refused.output


@pytest.mark.parametrize("host", ["vm ", "vm\n", "v\tm", "vm\u200b"])
def test_a_host_a_bundle_names_follows_the_rule_of_host_names(app, reference, runner, tmp_path, host):
    """Each reads as "vm" and would be recorded as another host, as --host refuses it to be."""
    bundle = write_bundle(tmp_path / "results.jsonl", rerun_result(reference, host=host))
    refused = runner.invoke(args=["import", "kernelindex", bundle])
    assert refused.exit_code == 1, refused.output
    assert "result 1: environment.host: a host is 1 to 120 printable characters" in refused.output
    assert Run.select().where(Run.source == "kernelindex").count() == 0
    assert runner.invoke(args=["import", "kernelindex", "--host", "vm", bundle]).exit_code == 0


@pytest.mark.parametrize("change, reason", [
    ({"observedAt": "2999-01-01T00:00:00Z"}, "in the future"),
    ({"family": "no_such_family"}, "declares the family 'no_such_family'"),
    ({"median": 80_000.0}, "same observedAt"),
])
def test_a_local_import_follows_the_same_rules(app, reference, runner, tmp_path, change, reason):
    write_bundle(tmp_path / "first.jsonl", rerun_result(reference, median=90_000.0))
    assert runner.invoke(args=["import", "kernelindex", str(tmp_path / "first.jsonl")]).exit_code == 0
    result = rerun_result(reference, **({"median": change["median"]} if "median" in change else {}))
    fields = {name: value for name, value in change.items() if name != "median"}
    bundle = write_bundle(tmp_path / "second.jsonl", {**result, **fields})
    imported = runner.invoke(args=["import", "kernelindex", bundle])
    assert imported.exit_code == 1 and reason in imported.output
    assert Run.select().where(Run.source == "kernelindex").count() == 1


@pytest.mark.parametrize("field, name", [
    ("family", "fused_neighborhood_attention/forward"), ("family", " fused_neighborhood_attention"),
    ("implementation", "ours/v2"), ("implementation", "ours\u202e2v"), ("implementation", ".."),
    ("family", "fused_neighborhood_attention.json"),
])
def test_a_bundle_names_families_and_implementations_as_plugins_must(app, reference, runner, tmp_path, field, name):
    """Each name is one segment of page addresses and run ids: a hand-made bundle is held to the rule discovery
    holds plugins to, so no run is stored whose page cannot be reached."""
    result = rerun_result(reference)
    if field == "family":
        result["family"] = name
    else:
        result["implementation"]["name"] = name
    imported = runner.invoke(args=["import", "kernelindex", write_bundle(tmp_path / "named.jsonl", result)])
    assert imported.exit_code == 1
    assert "printable characters with no / and no white space at either end" in imported.output
    assert Run.select().where(Run.source == "kernelindex").count() == 0


@pytest.mark.parametrize("bias", ["false", 1])
def test_an_option_value_the_family_does_not_define_is_refused(app, reference, runner, client, tmp_path, bias):
    """FNA's bias is true or false: the string "false" (which reads as true) or 1 names a workload no rerun of
    the family measures, in a comparison group of its own."""
    result = rerun_result(reference, observed_at=stamp(-10))
    result["workload"] = {**result["workload"], "options": {**result["workload"]["options"], "bias": bias}}
    assert_refused_on_import_and_post(runner, client, tmp_path, result, "fused_neighborhood_attention workloads "
                                      f"take the option bias as true or false, not {json.dumps(bias)}")


@pytest.mark.parametrize("options, given", [
    ({"Bias": "false"}, "Bias"), ({"bias": True, "BIAS": False}, "BIAS"), ({"bias ": False}, "bias "),
    ({"bias\u200b": False}, "bias\u200b"),
])
def test_an_option_the_family_reads_spelled_otherwise_is_refused(app, reference, runner, client, tmp_path, options,
                                                                  given):
    """FNA reads ``bias``: a result naming ``Bias`` measured the default while its workload says otherwise, in a
    comparison group of its own, past the check of bias's values."""
    result = {**rerun_result(reference, observed_at=stamp(-10)), "rerunOf": None}
    result["workload"] = {**result["workload"], "options": options}
    assert_refused_on_import_and_post(runner, client, tmp_path, result, "fused_neighborhood_attention workloads "
                                      f"name the option bias, not {json.dumps(given)}")


@pytest.mark.parametrize("bias, message", [
    (None, "must be a number, a boolean or a string of at most 80 characters, not null"),
    ([False], "must be a number, a boolean or a string of at most 80 characters"),
])
def test_an_option_value_that_is_no_scalar_is_refused_in_one_line(app, reference, runner, client, tmp_path, bias,
                                                                   message):
    """A null or a list where an option's value belongs is refused naming the option's place in the result, as one
    line (not marshmallow's nested messages dumped as JSON)."""
    result = rerun_result(reference, observed_at=stamp(-10))
    result["workload"] = {**result["workload"], "options": {**result["workload"]["options"], "bias": bias}}
    assert_refused_on_import_and_post(runner, client, tmp_path, result, f"workload.options.bias: {message}")


def assert_refused_on_import_and_post(runner, client, tmp_path, result, message):
    """``flask import kernelindex`` exits 1 and ``POST /api/v1/reruns`` answers 400, both saying ``message``; no
    rerun is stored."""
    imported = runner.invoke(args=["import", "kernelindex", write_bundle(tmp_path / "refused.jsonl", result)])
    assert imported.exit_code == 1 and message in imported.output, imported.output
    token = runner.invoke(args=["tokens", "create", "h200-a"]).output.strip()
    posted = client.post("/api/v1/reruns", json=[result], headers={"Authorization": f"Bearer {token}"})
    assert posted.status_code == 400 and message in posted.get_json()["error"]
    assert Run.select().where(Run.source == "kernelindex").count() == 0


@pytest.mark.parametrize("bundle, library_implementation", [
    ("h200-fair-fna-forward-reference.jsonl", "liger+tf32"),
    ("h200-families.jsonl", "huggingface"),
])
def test_committed_h200_bundles_import_where_their_libraries_do_not(app, runner, tmp_path, bundle,
                                                                    library_implementation):
    """Plugins declare Liger's and transformers' implementations as unavailable here, so their results recorded
    on the H200 are accepted by a server without liger_kernel or transformers. Unlinked (``rerunOf`` None):
    the published runs they reproduce are not in the test database."""
    results = [json.loads(line) for line in (REPOSITORY / "benchmarks" / "results" / "h200" / bundle).open()]
    assert library_implementation in {result["implementation"]["name"] for result in results}
    unlinked = write_bundle(tmp_path / bundle, *({**result, "rerunOf": None} for result in results))
    imported = runner.invoke(args=["import", "kernelindex", unlinked])
    assert imported.exit_code == 0, imported.output
    assert f"created {len(results)}, unchanged 0" in imported.output


def test_memory_results_rank_in_the_memory_comparison_beside_upstreams_rows(app, reference, client):
    """A memory result is a peak in MB, linked to the published memory run of its workload and pass, and ranks
    among memory reruns of that kernel, workload, pass and metric (on its own GPU and evidence, as speed reruns)."""
    published = Run.get(Run.metric == "memory")
    summary = record_rerun_results([memory_result(published, "liger", peak=50.0),
                                    memory_result(published, "torch", peak=120.0)])
    lean, heavy = sorted((Run.get_by_id(i) for i in summary.created), key=lambda run: run.median)
    assert (lean.metric, lean.unit, lean.median, lean.p80) == ("memory", "MB", 50.0, 50.5)
    assert (lean.rank, heavy.rank) == (1, 2) and lean.rerun_of_id == published.id
    assert lean.comparison_key_id == heavy.comparison_key_id != published.comparison_key_id
    ours, upstream = lean.comparison_key.shared, published.comparison_key.shared
    shared = ("kernel", "workload", "pass", "metric")
    assert [ours[name] for name in shared] == [upstream[name] for name in shared]
    assert (ours["evidence"], upstream["evidence"]) == ("kernelindex", "source-native")
    document = Manifest.get_by_id(lean.digest).document["spec"]
    assert document["memory"]["peak"] == {"unit": "MB", "median": 50.0}
    assert document["rerun"]["memory"]["samples"] == [50.0] * 3 + [50.5] * 2
    protocol = Manifest.get_by_id(document["protocolDigest"]).document["spec"]["measurement"]
    assert protocol["probe"] == "torch.cuda.max_memory_allocated"
    page = client.get(f"/runs/{lean.id}").get_data(as_text=True)
    assert "50 MB" in page
    assert client.get(f"/comparisons/{lean.comparison_key_id}").status_code == 200


def test_a_memory_result_reproduces_only_a_memory_run(app, reference):
    speed_run = reference
    with pytest.raises(RerunRejected, match="measures speed, not memory"):
        record_rerun_results([memory_result(speed_run)])
    with pytest.raises(RerunRejected, match="carries no timing"):
        record_rerun_results([{**memory_result(speed_run), "timing": rerun_result(speed_run)["timing"]}])
    with pytest.raises(RerunRejected, match="carries its memory"):
        record_rerun_results([{**memory_result(speed_run), "memory": None}])
    published = Run.get(Run.metric == "memory")
    inverted = memory_result(published, peak=50.0)
    inverted["memory"] = {**inverted["memory"], "p20": 52.0}
    with pytest.raises(RerunRejected, match="p20 <= median"):
        record_rerun_results([inverted])


def test_a_failed_memory_result_is_recorded_without_a_peak(app, reference):
    published = Run.get(Run.metric == "memory")
    failed = {**memory_result(published), "status": "failed", "memory": None, "error": "memory: OutOfMemoryError"}
    run = Run.get_by_id(record_rerun_results([failed]).created[0])
    assert (run.metric, run.unit, run.status, run.median, run.rank) == ("memory", "MB", "failed", None, None)


def test_a_result_that_says_passed_against_its_own_figures_is_refused():
    """A bundle line's verdict must follow from its figures under the current policy it names (a committed line
    judged under version 3 as it is, and with its output's error made 1,000 times larger)."""
    from app.importers.kernelindex_rerun import verdict_problem
    from app.rerun_schemas import result_schema

    bundle = Path(__file__).parent.parent / "benchmarks" / "results" / "h200" / "h200-host-cost.jsonl"
    result = result_schema.load(json.loads(bundle.read_text().splitlines()[0]))
    assert result["status"] == "passed" and verdict_problem(result) is None
    figures = result["correctness"]["outputFigures"]["output"]
    figures["differenceNorms"] = [norm * 1000 for norm in figures["differenceNorms"]]
    problem = verdict_problem(result)
    assert problem.startswith("it says passed, but its own figures do not pass policy version 3: output: error at")


@pytest.mark.parametrize("policy_change", [
    {"version": 99}, {"version": 4}, {"version": "3"}, {"version": True}, {"version": None},
    {"tolerances": {"bf16": 1.0, "fp16": 1.0, "fp32": 1.0, "tf32": 1.0}},  # version 3 by name, not by its table
    {"version": 2},  # version 2's table has no own-scale cap
])
def test_a_result_whose_policy_was_never_published_is_refused(policy_change):
    """Naming another version (or none, or a published one with other figures) does not take a verdict past the
    check: the failing line of the test above, and a passing one, under each such policy."""
    from app.importers.kernelindex_rerun import verdict_problem
    from app.rerun_schemas import result_schema

    bundle = Path(__file__).parent.parent / "benchmarks" / "results" / "h200" / "h200-host-cost.jsonl"
    for scale in (1, 1000):
        result = result_schema.load(json.loads(bundle.read_text().splitlines()[0]))
        figures = result["correctness"]["outputFigures"]["output"]
        figures["differenceNorms"] = [norm * scale for norm in figures["differenceNorms"]]
        result["correctness"]["policy"].update(policy_change)
        assert "is not one KernelIndex published" in verdict_problem(result)
        del result["correctness"]["policy"]
        assert "is not one KernelIndex published" in verdict_problem(result)


def test_a_passed_result_whose_figures_cover_no_trial_is_refused(app, reference):
    result = rerun_result(reference)
    result["correctness"]["outputFigures"]["output"]["differenceNorms"] = []
    with pytest.raises(RerunRejected, match="cannot be judged under policy version 3"):
        record_rerun_results([result])


def test_a_result_of_an_older_policy_is_judged_by_the_version_it_names():
    """A committed version 2 line passes under version 2's table; with its errors made 1,000 times larger it does
    not, though it names an older version."""
    from app.importers.kernelindex_rerun import verdict_problem
    from app.rerun_schemas import result_schema

    for path in sorted((Path(__file__).parent.parent / "benchmarks" / "results").rglob("*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        older = [line for line in lines if line["status"] == "passed" and line["correctness"]["policy"]["version"] == 2
                 and "outputFigures" in line["correctness"]]
        if older:
            break
    result = result_schema.load(older[0])
    assert verdict_problem(result) is None
    for figures in result["correctness"]["outputFigures"].values():
        figures["differenceNorms"] = [norm * 1000 for norm in figures["differenceNorms"]]
    assert verdict_problem(result).startswith("it says passed, but its own figures do not pass policy version 2")


@pytest.mark.parametrize("error", [RuntimeError("CUDA is not here"), AttributeError("'list' has no attribute 'x'"),
                                   IndexError("tuple index out of range")])
def test_a_family_whose_derive_tensors_breaks_refuses_the_workload_naming_it(error):
    """derive_tensors is a plugin's code: any exception of it refuses the result (a 500 on a host's upload before),
    not only the ones that say a value does not fit."""
    from app.importers.rerun_submission import workload_problem
    from runners.types import FamilyDefinition

    def derive_tensors(values, dtype):
        raise error

    family = FamilyDefinition(name="broken_family", title="Broken", parameters=("n",), derive_tensors=derive_tensors)
    problem = workload_problem({"parameters": {"n": 4}, "options": {}, "dtype": "fp32"}, family)
    assert problem == f"broken_family's derive_tensors failed on this workload: {type(error).__name__}: {error}"


@pytest.mark.parametrize("gpu, refusal", [
    ("nvidia h200", "the GPU 'nvidia h200' reads as 'NVIDIA H200', as the index (or this import) spells it"),
    ("\uff2e\uff36\uff29\uff24\uff29\uff21 H200", "the GPU '\uff2e\uff36\uff29\uff24\uff29\uff21 H200' reads as "
                                                  "'NVIDIA H200'"),  # full-width
    ("NVIDIA H100 80GB HBM3", None),  # the reference's own GPU, spelled as stored
])
def test_a_rerun_spelling_a_stored_gpu_another_way_is_refused(app, reference, gpu, refusal):
    """It read as the stored GPU on every page, yet ranked in groups of its own. (An implementation's name is one a
    plugin declares, spelled so.)"""
    record_rerun_results([rerun_result(reference, "torch", median=80_000.0)])
    result = rerun_result(reference, "torch", median=81_000.0, host="h200-b")
    result["environment"]["hardware"] = {**result["environment"]["hardware"], "name": gpu, "product": gpu}
    if refusal is None:
        assert len(record_rerun_results([result]).created) == 1
        return
    with pytest.raises(RerunRejected, match=re.escape(f"result 1: {refusal}")):
        record_rerun_results([result])
    assert Run.select().where(Run.source == "kernelindex").count() == 1


def committed_line(path="benchmarks/results/h200/h200-fair-mta-reference.jsonl"):
    """The first result of a committed bundle: one the harness wrote on a GPU."""
    return json.loads((REPOSITORY / path).read_text(encoding="utf-8").splitlines()[0])


def spread_summary(result):
    timing = result["timing"]
    timing["p20"], timing["median"], timing["p80"] = sorted(sample for trial in timing["samples"] for sample in trial)[:3]


@pytest.mark.parametrize("forge, refusal", [
    (spread_summary, "timing.median is .*, but its samples give"),
    (lambda result: result["timing"].update(cv=0.0), "timing.cv is 0, but its samples give"),
    (lambda result: result["correctness"].update(relL2Error=1e-9), "relL2Error is 1e-09, but its figures give"),
    (lambda result: result["correctness"].update(outputErrors={"output": 1e-9}), "outputErrors .* are not the errors"),
    (lambda result: result["correctness"].update(tolerance=0.5), "tolerance is 0.5, but policy version 2 holds"),
    (lambda result: result["correctness"].update(passed=False), "correctness record says the check did not pass"),
    (lambda result: result["implementation"].update(mathMode="ieee-fp32"), "math mode 'ieee-fp32' is not that of"),
    (lambda result: result["environment"]["hardware"].update(architecture="sm_80"), "an sm_90 GPU, with the"),
])
def test_a_result_whose_summaries_are_not_those_of_its_figures_is_refused(app, runner, tmp_path, forge, refusal):
    """A committed result with one summary edited (the statistics of its samples, the verdict of its correctness
    figures, its math mode, its GPU's architecture) was recorded and shown as measured: pages show the summaries."""
    result = committed_line()
    forge(result)
    bundle = tmp_path / "forged.jsonl"
    bundle.write_text(json.dumps(result) + "\n", encoding="utf-8")
    outcome = runner.invoke(args=["import", "kernelindex", str(bundle)])
    assert outcome.exit_code == 1 and re.search(refusal, outcome.output), outcome.output
    assert not Run.select().where(Run.source == "kernelindex").exists()


def test_a_memory_result_whose_peaks_do_not_give_its_median_is_refused(app, reference):
    result = memory_result(Run.get(Run.metric == "memory"), "liger", peak=50.0)
    result["memory"]["median"] = 50.4
    with pytest.raises(RerunRejected, match="memory.median is 50.4, but its samples give 50"):
        record_rerun_results([result])


def test_a_rerun_of_another_pass_is_refused(app, reference):
    """A backward result said it reproduced a forward run of the same workload: it was linked to it."""
    result = rerun_result(reference)
    result["pass"] = "backward" if reference.pass_ != "backward" else "forward"
    result["cost"] = harness_cost(result)
    with pytest.raises(RerunRejected, match=f"rerunOf {reference.id} times the {reference.pass_} pass"):
        record_rerun_results([result])
    assert not Run.select().where(Run.source == "kernelindex").exists()


@pytest.mark.parametrize("field, value", [("project", "K\u0435rnelIndex \u202eevil"), ("revision", "\u202e2.11.0"),
                                          ("project", "PyTorch\u200b"), ("revision", " 2.11.0")])
def test_a_project_or_revision_that_reads_as_another_is_refused(app, reference, field, value):
    """The run page shows an implementation's project and revision beside its name: a direction override or an
    invisible mark made them read as another's, as the rule of names refuses for the name itself."""
    result = rerun_result(reference)
    result["implementation"][field] = value
    with pytest.raises(RerunRejected, match=f"implementation.*{field}.*printable"):
        record_rerun_results([result])


@pytest.mark.parametrize("count", ["flops", "bytes"])
def test_a_cost_other_than_its_familys_count_is_refused(app, reference, count):
    """The run page divides a cost by the median for its achieved rate and share of the floor: a result claiming ten
    times the work its family counts was shown at ten times its throughput."""
    result = rerun_result(reference)
    counted = result["cost"][count]
    result["cost"][count] = counted * 10
    with pytest.raises(RerunRejected, match=rf"its cost .*'{count}': {counted * 10}.* is not what "
                                            rf"{reference.kernel_id}'s workload_cost hook counts .*'{count}': {counted}"):
        record_rerun_results([result])
    assert not Run.select().where(Run.source == "kernelindex").exists()


@pytest.mark.parametrize("cost, refusal", [(None, "cost: Missing data for required field"),
                                           ({}, "cost.flops: Missing data for required field"),
                                           ({"flops": 1}, "cost.bytes: Missing data for required field")])
def test_a_result_without_a_cost_is_refused_saying_which(app, reference, cost, refusal):
    """Every result is checked against its family's count (ee5f66e), so a cost or a count left out is refused as
    missing; the schema defaulted it to {}, which was then refused as 'its cost {} is not what ... counts'."""
    result = rerun_result(reference)
    if cost is None:
        del result["cost"]
    else:
        result["cost"] = cost
    with pytest.raises(RerunRejected, match=re.escape(refusal)):
        record_rerun_results([result])


@pytest.mark.parametrize("declares_family", [True, False])
def test_a_one_trial_result_claiming_the_standard_family_is_refused(app, reference, declares_family):
    """One trial of one sample said kernelindex_rerun (or said no family, which is that one) and ranked beside
    standard reruns of 5 trials of 20 samples."""
    result = rerun_result(reference, trials=1)
    result["timing"] = {**result["timing"], "samples": [result["timing"]["samples"][0][:1]], "samplesPerTrial": 1,
                        "cv": 0.0}
    result["timing"].update(median=result["timing"]["samples"][0][0], p20=result["timing"]["samples"][0][0],
                            p80=result["timing"]["samples"][0][0])
    result["protocol"]["samplesPerTrial"] = 1
    if not declares_family:
        del result["protocol"]["comparabilityFamily"]
    with pytest.raises(RerunRejected, match="it ranks in kernelindex_rerun, but its protocol states trials 1, "
                                            "samplesPerTrial 1 where the standard protocol published for cuda has "
                                            "trials 5, samplesPerTrial 20"):
        record_rerun_results([result])
    assert not Run.select().where(Run.source == "kernelindex").exists()


@pytest.mark.parametrize("setting, value", [("timer", "perf_counter_ns"), ("warmupReps", 0), ("preset", "grid"),
                                            ("name", "kernelindex-grid")])
def test_a_standard_result_with_another_setting_is_refused(app, reference, setting, value):
    result = rerun_result(reference)
    result["protocol"][setting] = value
    with pytest.raises(RerunRejected, match=f"its protocol states {setting} {value!r} where the standard protocol "
                                            f"published for cuda has {setting} "):
        record_rerun_results([result])


def test_a_result_of_an_unpublished_family_ranks_apart_with_its_own_settings(app, reference):
    """A grid's results (benchmarks/kernel_grid.py: 3 trials of 10) declare a family of their own."""
    standard = record_rerun_results([rerun_result(reference)]).created[0]
    grid = rerun_result(reference, "torch", trials=3)
    grid["protocol"].update(name="kernelindex-grid", preset="grid", comparabilityFamily="kernelindex_rerun_grid")
    grid = record_rerun_results([grid]).created[0]
    assert Run.get_by_id(standard).comparison_key_id != Run.get_by_id(grid).comparison_key_id
