"""Invalidated results: a run found gamed keeps its page, shows why and who decided, and leaves every ranking;
a maintainer's invalidation made by mistake is reinstated, and the run's page keeps both decisions.

Runs on SQLite, and on PostgreSQL with ``KERNELINDEX_TEST_POSTGRES`` set (tests/conftest.py).
"""

import csv
import io
import json
from datetime import datetime, timedelta
from urllib.parse import urlencode

import pytest
from werkzeug.security import generate_password_hash

from app.importers.kernelindex_rerun import HARNESS, RerunRejected, record_rerun_results
from app.invalidation import InvalidationRefused, invalidate, reinstate
from app.models import ComparisonGroup, InvalidationDecision, Maintainer, Run

from .factories import rerun_result
from .pages_support import reference_run, text_of

REASON = "returns the output it remembered for the input address once timed"
VIOLATION = "audit: timed call 7 of 200 returned a wrong output (relative L2 error 1.41, tolerance 0.0001)"
MISTAKE = "the report was about another run: this one's outputs are checked afresh every trial"


@pytest.fixture
def reference(small_app):
    with small_app.app_context():
        yield reference_run(small_app)


@pytest.fixture
def ranked(reference):
    """Two reruns of one workload ranked in one group: the faster first."""
    created = record_rerun_results([rerun_result(reference, "kernelindex_triton", median=80_000.0),
                                    rerun_result(reference, "torch", median=88_800_000.0)]).created
    return sorted((Run.get_by_id(run_id) for run_id in created), key=lambda run: run.median)


def test_an_invalidated_run_leaves_its_groups_ranking_and_keeps_its_page(ranked, client):
    fast, slow = ranked
    assert (fast.rank, slow.rank) == (1, 2)
    invalidate(fast.id, REASON, "alice")
    fast, slow = Run.get_by_id(fast.id), Run.get_by_id(slow.id)
    assert fast.rank is None and slow.rank == 1
    group = ComparisonGroup.get_by_id(slow.comparison_key_id)
    assert (group.size, group.leader) == (1, slow.id)
    assert fast.invalidation["reason"] == REASON and fast.invalidation["by"] == "alice"

    page = client.get(f"/runs/{fast.id}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "Not ranked: invalidated by alice" in text and REASON in text
    twin = client.get(f"/runs/{fast.id}.json").get_json()
    assert twin["invalidation"]["reason"] == REASON and twin["invalidation"]["by"] == "alice"
    assert twin["invalidation_notice"].startswith("Invalidated on ") and twin["comparison"]["rank"] is None
    api = client.get(f"/api/v1/runs/{fast.id}").get_json()
    assert api["invalidation"]["by"] == "alice"
    assert datetime.fromisoformat(api["invalidation"]["at"]).utcoffset() == timedelta(0)
    assert client.get(f"/api/v1/runs/{slow.id}").get_json()["invalidation"] is None
    badge = 'title="This run was invalidated: found gamed, it does not rank.">invalidated</span>'
    for listing in ("/", f"/search?q={fast.kernel_id}", f"/runs/{fast.rerun_of_id}",
                    f"/families/{fast.kernel_id}?" + urlencode({"gpu": fast.gpu, "pass": fast.pass_})):
        listed = client.get(listing).get_data(as_text=True)
        assert listed.count(badge) == 1, listing  # beside the invalidated run, not beside the other


def test_the_lists_twins_and_bulk_downloads_say_a_run_was_invalidated(ranked, client):
    fast, slow = ranked
    invalidate(fast.id, REASON, "alice")
    for listing in (f"/api/v1/runs?kernel={fast.kernel_id}", f"/search.json?q={fast.kernel_id}",
                    f"/families/{fast.kernel_id}.json?" + urlencode({"gpu": fast.gpu, "pass": fast.pass_})):
        items = {item["id"]: item for item in client.get(listing).get_json()["items"]}
        assert items[fast.id]["invalidation"]["reason"] == REASON, listing
        assert items[fast.id]["invalidation"]["by"] == "alice" and items[fast.id]["rank"] is None, listing
        assert items[slow.id]["invalidation"] is None, listing
    lines = client.get("/downloads/runs.jsonl").get_data(as_text=True).splitlines()
    rows = {row["id"]: row for row in map(json.loads, lines)}
    assert (rows[fast.id]["invalidated_by"], rows[fast.id]["invalidated_reason"]) == ("alice", REASON)
    assert datetime.fromisoformat(rows[fast.id]["invalidated_at"]).utcoffset() == timedelta(0)
    assert rows[slow.id]["invalidated_at"] is None
    table = {row["id"]: row for row in csv.DictReader(io.StringIO(client.get("/downloads/runs.csv").get_data(
        as_text=True)))}
    assert table[fast.id]["invalidated_reason"] == REASON and table[slow.id]["invalidated_by"] == ""


def test_an_invalidated_rerun_no_longer_replicates(reference):
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")])
    created = record_rerun_results([rerun_result(reference, median=80_500.0, host="h200-b",
                                                 observed_at="2026-11-29T11:00:00Z")]).created
    invalidate(created[0], REASON, "alice")
    assert {run.evidence for run in Run.select().where(Run.source == "kernelindex")} == {"kernelindex-rerun"}


@pytest.mark.parametrize("reason, by, message", [
    ("", "alice", "say why"),
    ("\u3164", "alice", "say why"),  # drawn as nothing, as are the next
    ("\u2800 \u200b", "alice", "say why"),
    ("\ufeff\n\u115f", "alice", "say why"),
    (REASON, " ", "say who decides"),
    ("x" * 2001, "alice", "longer than 2000"),
    ("gamed\x00 timer", "alice", "control character U\\+0000"),
    (REASON, "al\x1bice", "control character U\\+001B"),
    ("gamed \u202etimer", "alice", "text-direction control U\\+202E"),
    (REASON, "al\u2067ice", "text-direction control U\\+2067"),
    # bytes that are not UTF-8 on the command line (``--reason $'\\xff'``) reach Python as a lone surrogate
    ("gamed \udcff timer", "alice", "not UTF-8 text \\(U\\+DCFF\\)"),
    (REASON, "KernelIndex rerun harness (at run time)", "is the rerun harness, not a maintainer"),
])
def test_an_invalidation_needs_a_reason_and_a_decider(ranked, reason, by, message):
    with pytest.raises(InvalidationRefused, match=message):
        invalidate(ranked[0].id, reason, by)
    assert Run.get_by_id(ranked[0].id).rank == 1


def test_a_run_is_invalidated_once(ranked):
    invalidate(ranked[0].id, REASON, "alice")
    with pytest.raises(InvalidationRefused, match="invalidated already, by alice"):
        invalidate(ranked[0].id, "another reason", "bob")


def harness_found_gamed(reference) -> tuple[str, str]:
    """A gamed result its harness caught, and an honest one beside it, recorded: their run ids."""
    gamed = rerun_result(reference, "kernelindex_triton", status="failed")
    gamed["error"] = f"audit: integrity violation: {VIOLATION.split(': ', 1)[1]}"
    gamed["integrity"] = {"inputSeeds": [17, 23], "timedCalls": 200, "auditedCalls": [7], "violations": [VIOLATION]}
    honest = rerun_result(reference, "torch", median=88_000.0)
    honest["integrity"] = {"inputSeeds": [17, 23], "timedCalls": 200, "auditedCalls": [3], "violations": []}
    return tuple(record_rerun_results([gamed, honest]).created)


def test_a_result_its_harness_found_gamed_is_recorded_invalidated(reference):
    gamed_id, honest_id = harness_found_gamed(reference)
    gamed_run, honest_run = Run.get_by_id(gamed_id), Run.get_by_id(honest_id)
    assert gamed_run.invalidation["by"] == HARNESS and gamed_run.invalidation["reason"] == VIOLATION
    assert gamed_run.rank is None and gamed_run.details["integrity"]["auditedCalls"] == [7]
    assert honest_run.invalidation is None and honest_run.rank == 1
    assert gamed_run.invalidation_history() == []  # no one's decision


def test_flask_invalidate_records_the_maintainer(ranked, runner):
    Maintainer.create(username="alice", password_hash=generate_password_hash("long enough password"))
    refused = runner.invoke(args=["invalidate", ranked[0].id, "--reason", REASON, "--by", "mallory"])
    assert refused.exit_code != 0 and "no maintainer account 'mallory'" in refused.output
    done = runner.invoke(args=["invalidate", ranked[0].id, "--reason", REASON, "--by", "alice"])
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"invalidated {ranked[0].id} (") and REASON in done.output
    assert Run.get_by_id(ranked[0].id).invalidated_by == "alice" and Run.get_by_id(ranked[1].id).rank == 1
    again = runner.invoke(args=["invalidate", ranked[0].id, "--reason", REASON, "--by", "alice"])
    assert again.exit_code != 0 and "invalidated already" in again.output


# --- reinstating a run invalidated by mistake ------------------------------------------------------

def decisions(run_id: str) -> list[tuple[str, str, str]]:
    """The decisions stored on ``run_id``, oldest first: action, reason and who decided."""
    stored = (InvalidationDecision.select().where(InvalidationDecision.run == run_id)
              .order_by(InvalidationDecision.decided_at, InvalidationDecision.id))
    return [(decision.action, decision.reason, decision.decided_by) for decision in stored]


def test_a_reinstated_run_ranks_again_and_its_page_keeps_both_decisions(ranked, client):
    fast, slow = ranked
    invalidate(fast.id, REASON, "alice")
    reinstated = reinstate(fast.id, MISTAKE + "\r\n", "bob")
    assert reinstated.invalidation is None and reinstated.rank == 1 and Run.get_by_id(slow.id).rank == 2
    group = ComparisonGroup.get_by_id(fast.comparison_key_id)
    assert (group.size, group.leader) == (2, fast.id)
    assert decisions(fast.id) == [("invalidated", REASON, "alice"), ("reinstated", MISTAKE, "bob")]
    assert decisions(slow.id) == []

    text = text_of(client.get(f"/runs/{fast.id}").get_data(as_text=True))
    assert "Rank 1 in its comparison group" in text and "Not ranked: invalidated" not in text
    history = text[text.index("Invalidation history"):].splitlines()
    assert history[1].startswith("Invalidated on ") and history[1].endswith(f" UTC by alice: {REASON}")
    assert history[2].startswith("Reinstated on ") and history[2].endswith(f" UTC by bob: {MISTAKE}")
    for url in (f"/runs/{fast.id}.json", f"/api/v1/runs/{fast.id}"):
        document = client.get(url).get_json()
        assert document["invalidation"] is None and document["comparison"]["rank"] == 1, url
        history = document["invalidation_history"]
        assert [(d["action"], d["reason"], d["by"]) for d in history] == decisions(fast.id), url
        assert all(datetime.fromisoformat(d["at"]).utcoffset() == timedelta(0) for d in history), url
        assert history[0]["at"] <= history[1]["at"], url
    assert client.get(f"/api/v1/runs/{slow.id}").get_json()["invalidation_history"] == []
    assert "Invalidation history" not in client.get(f"/runs/{slow.id}").get_data(as_text=True)


def test_a_reinstated_run_may_be_invalidated_again(ranked):
    invalidate(ranked[0].id, REASON, "alice")
    reinstate(ranked[0].id, MISTAKE, "bob")
    invalidated = invalidate(ranked[0].id, "gamed after all", "carol")
    assert invalidated.rank is None and invalidated.invalidation["by"] == "carol"
    assert [action for action, _, _ in decisions(ranked[0].id)] == ["invalidated", "reinstated", "invalidated"]


def test_a_reinstated_rerun_replicates_again(reference):
    record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")])
    created = record_rerun_results([rerun_result(reference, median=80_500.0, host="h200-b",
                                                 observed_at="2026-11-29T11:00:00Z")]).created
    def evidence():
        return {run.evidence for run in Run.select().where(Run.source == "kernelindex")}

    assert evidence() == {"kernelindex-replicated"}
    invalidate(created[0], REASON, "alice")
    assert evidence() == {"kernelindex-rerun"}
    reinstate(created[0], MISTAKE, "alice")
    assert evidence() == {"kernelindex-replicated"}


def test_a_reinstated_superseded_rerun_gets_back_its_replication(reference):
    """A superseded rerun keeps the evidence it had when current (no replication judges it again): reinstated, it
    gets back what its invalidation took, each time."""
    superseded = record_rerun_results([rerun_result(reference, median=80_000.0, host="h200-a")]).created[0]
    record_rerun_results([rerun_result(reference, median=80_500.0, host="h200-b", observed_at="2026-11-29T11:00:00Z")])
    record_rerun_results([rerun_result(reference, median=90_500.0, host="h200-a", observed_at="2026-11-29T12:00:00Z")])
    assert Run.get_by_id(superseded).superseded_by_id is not None
    assert Run.get_by_id(superseded).evidence == "kernelindex-replicated"
    for _ in range(2):
        assert invalidate(superseded, REASON, "alice").evidence == "kernelindex-rerun"
        reinstated = reinstate(superseded, MISTAKE, "bob")
        assert (reinstated.evidence, reinstated.rank, reinstated.invalidation) == ("kernelindex-replicated", None, None)


def test_a_result_its_harness_found_gamed_is_not_reinstated(reference):
    gamed_id, _ = harness_found_gamed(reference)
    with pytest.raises(InvalidationRefused, match="invalidated by the rerun harness, which caught it tampering"):
        reinstate(gamed_id, MISTAKE, "alice")
    gamed = Run.get_by_id(gamed_id)
    assert gamed.invalidation["by"] == HARNESS and decisions(gamed_id) == []


def test_a_run_that_stands_is_not_reinstated(ranked):
    with pytest.raises(InvalidationRefused, match="is not invalidated: there is nothing to reinstate"):
        reinstate(ranked[0].id, MISTAKE, "alice")
    with pytest.raises(InvalidationRefused, match="no run nosuchrun"):
        reinstate("nosuchrun", MISTAKE, "alice")
    assert Run.get_by_id(ranked[0].id).rank == 1 and InvalidationDecision.select().count() == 0


@pytest.mark.parametrize("reason, by, message", [
    ("", "alice", "say why the result can be trusted after all"),
    ("\u2800\u3164", "alice", "say why the result can be trusted after all"),
    (REASON, " ", "say who decides"),
    ("x" * 2001, "alice", "longer than 2000"),
    ("a mistake\x00", "alice", "control character U\\+0000"),
    (MISTAKE, "b\u202eob", "text-direction control U\\+202E"),
    ("a mistake \udcff", "alice", "not UTF-8 text \\(U\\+DCFF\\)"),
])
def test_a_reinstatement_needs_a_reason_and_a_decider(ranked, reason, by, message):
    invalidate(ranked[0].id, REASON, "alice")
    with pytest.raises(InvalidationRefused, match=message):
        reinstate(ranked[0].id, reason, by)
    assert Run.get_by_id(ranked[0].id).invalidation["by"] == "alice" and Run.get_by_id(ranked[1].id).rank == 1
    assert decisions(ranked[0].id) == [("invalidated", REASON, "alice")]


def test_flask_reinstate_records_the_maintainer(ranked, runner):
    Maintainer.create(username="alice", password_hash=generate_password_hash("long enough password"))
    fast = ranked[0].id
    stands = runner.invoke(args=["reinstate", fast, "--reason", MISTAKE, "--by", "alice"])
    assert stands.exit_code == 1 and stands.output == f"Error: {fast} is not invalidated: there is nothing to " \
                                                      "reinstate\n"
    assert runner.invoke(args=["invalidate", fast, "--reason", REASON, "--by", "alice"]).exit_code == 0
    for arguments, refusal in ((["--reason", MISTAKE, "--by", "mallory"], "no maintainer account 'mallory'"),
                               (["--reason", " ", "--by", "alice"], "say why the result can be trusted after all")):
        refused = runner.invoke(args=["reinstate", fast, *arguments])
        assert refused.exit_code == 1 and refused.output == f"Error: {refusal}\n", refused.output
        assert Run.get_by_id(fast).rank is None and len(decisions(fast)) == 1
    done = runner.invoke(args=["reinstate", fast, "--reason", MISTAKE, "--by", "alice"])
    assert done.exit_code == 0, done.output
    assert done.output == f"reinstated {fast} ({ranked[0].kernel_id}/{ranked[0].pass_}/kernelindex_triton): " \
                          "rank 1 in its group\n"
    assert Run.get_by_id(fast).invalidation is None and decisions(fast)[-1] == ("reinstated", MISTAKE, "alice")


def test_flask_reinstate_refuses_what_the_harness_found(reference, runner):
    Maintainer.create(username="alice", password_hash=generate_password_hash("long enough password"))
    gamed_id, _ = harness_found_gamed(reference)
    refused = runner.invoke(args=["reinstate", gamed_id, "--reason", MISTAKE, "--by", "alice"])
    assert refused.exit_code == 1 and len(refused.output.splitlines()) == 1
    assert "invalidated by the rerun harness" in refused.output and "no maintainer reinstates it" in refused.output
    assert Run.get_by_id(gamed_id).invalidation["by"] == HARNESS and decisions(gamed_id) == []


@pytest.mark.parametrize("section, value, field", [
    ("integrity", {"inputSeeds": [1], "timedCalls": 4, "auditedCalls": [1], "violations": "gamed"}, "violations"),
    ("integrity", {"inputSeeds": [1], "timedCalls": 4, "auditedCalls": [0], "violations": []}, "auditedCalls"),
    ("telemetry", {"available": True, "samples": [{"trial": 1, "smClockMHz": -5, "memoryClockMHz": 1,
                                                   "temperatureC": 40, "powerW": 1, "throttleReasons": []}]},
     "samples"),
])
def test_integrity_and_telemetry_sections_are_validated(reference, section, value, field):
    result = rerun_result(reference, "torch", median=88_000.0)
    result[section] = value
    with pytest.raises(RerunRejected, match=field):
        record_rerun_results([result])
    assert Run.select().where(Run.source == "kernelindex").count() == 0
