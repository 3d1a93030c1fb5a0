"""Rerun hosts posting to ``/api/v1/reruns`` (issue 19): the host is the token's, replication needs two hosts
and two GPUs, ``observedAt`` lies within the token's validity, a repost never overwrites, and only what the
server's plugins declare is accepted. Each test first reproduces a forgery that used to be accepted."""

import pytest

from app.models import Manifest, Run
from runners import discovery

from .factories import rerun_result, stamp
from .pages_support import reference_run


@pytest.fixture
def reference(small_app):
    with small_app.app_context():
        yield reference_run(small_app)


def token_for(runner, name, *options) -> str:
    created = runner.invoke(args=["tokens", "create", name, *options])
    assert created.exit_code == 0, created.output
    return created.stdout.strip()


def post(client, token, *results):
    return client.post("/api/v1/reruns", json=list(results), headers={"Authorization": f"Bearer {token}"})


def reruns() -> list[Run]:
    return list(Run.select().where(Run.source == "kernelindex").order_by(Run.observed_at))


def test_the_recorded_host_is_the_tokens_never_the_bodys(reference, runner, client):
    token = token_for(runner, "a", "--host", "h200-a")
    assert post(client, token, rerun_result(reference, host="h200-a", observed_at=stamp(-60))).status_code == 201
    forged = post(client, token, rerun_result(reference, host="h200-b", median=80_100.0, observed_at=stamp(-30)))
    assert forged.status_code == 201
    older, newer = reruns()
    assert (older.host, newer.host) == ("h200-a", "h200-a") and older.superseded_by_id == newer.id
    assert {run.evidence for run in reruns()} == {"kernelindex-rerun"}  # one token posting twice never replicates
    assert Manifest.get_by_id(newer.environment_digest).document["spec"]["host"] == "h200-a"
    assert newer.received_at is not None and newer.received_at >= newer.observed_at


def test_two_tokens_of_one_host_do_not_replicate(reference, runner, client):
    first, second = token_for(runner, "a1", "--host", "h200-a"), token_for(runner, "a2", "--host", "h200-a")
    assert post(client, first, rerun_result(reference, observed_at=stamp(-60))).status_code == 201
    assert post(client, second, rerun_result(reference, host="h200-b", observed_at=stamp(-30))).status_code == 201
    assert [run.is_current for run in reruns()] == [False, True]
    assert {run.evidence for run in reruns()} == {"kernelindex-rerun"}


@pytest.mark.parametrize("uuids, replicated", [((None, None), True), (("GPU-1", "GPU-2"), True),
                                               (("GPU-1", "GPU-1"), False)])
def test_replication_needs_two_hosts_and_two_gpus(reference, runner, client, uuids, replicated):
    for name, uuid in zip(("h200-a", "h200-b"), uuids):
        result = rerun_result(reference, median=80_000.0, observed_at=stamp(-30))
        if uuid:
            result["environment"]["hardware"]["uuid"] = uuid
        assert post(client, token_for(runner, name, "--host", name), result).status_code == 201
    level = "kernelindex-replicated" if replicated else "kernelindex-rerun"
    assert {run.evidence for run in reruns()} == {level} and {run.host for run in reruns()} == {"h200-a", "h200-b"}


def test_a_repost_with_the_same_observed_at_never_overwrites(reference, runner, client):
    token = token_for(runner, "a", "--host", "h200-a")
    genuine = rerun_result(reference, median=80_000.0, observed_at=stamp(-60))
    assert post(client, token, genuine).status_code == 201
    assert post(client, token, genuine).get_json()["unchanged"] == 1  # the same result again is idempotent
    faster = rerun_result(reference, median=6.0, observed_at=genuine["observedAt"])
    refused = post(client, token, faster)
    assert refused.status_code == 409 and "same observedAt" in refused.get_json()["error"]
    [run] = reruns()
    assert run.median == genuine["timing"]["median"] and run.is_current


@pytest.mark.parametrize("observed_at, reason", [("2999-01-01T00:00:00Z", "in the future"),
                                                 (stamp(3600), "in the future"),
                                                 (stamp(-3600), "before the token"),
                                                 ("2026-11-29T10:00:00", "timezone")])
def test_observed_at_lies_within_the_tokens_validity(reference, runner, client, observed_at, reason):
    token = token_for(runner, "a", "--host", "h200-a")
    response = post(client, token, rerun_result(reference, observed_at=observed_at))
    assert response.status_code == 400 and reason in response.get_json()["error"]
    assert not reruns()


def test_a_little_clock_skew_is_allowed(reference, runner, client):
    token = token_for(runner, "a", "--host", "h200-a")
    assert post(client, token, rerun_result(reference, observed_at=stamp(120))).status_code == 201


def test_a_token_limited_to_gpu_kinds(reference, runner, client):
    token = token_for(runner, "a", "--host", "h100-a", "--gpu", "NVIDIA H100")
    refused = post(client, token, rerun_result(reference, observed_at=stamp(-10)))
    assert refused.status_code == 403, refused.get_json()  # the token's rights, as a worker's check-in for it
    assert refused.get_json()["error"].startswith("result 1: the token for host 'h100-a' posts results for NVIDIA H100 only")
    assert not reruns()
    allowed = token_for(runner, "b", "--host", "h200-b", "--gpu", "NVIDIA H100", "--gpu", "NVIDIA H200")
    assert post(client, allowed, rerun_result(reference, observed_at=stamp(-10))).status_code == 201


def test_a_host_reads_what_its_token_may_do_before_it_measures(reference, runner, client):
    scoped = token_for(runner, "a", "--host", "h100-a", "--gpu", "NVIDIA H100", "--gpu", "NVIDIA H200")
    asking = token_for(runner, "b", "--may-request")
    read = client.get("/api/v1/rerun-token", headers={"Authorization": f"Bearer {scoped}"})
    assert read.status_code == 200
    assert read.get_json() == {"host": "h100-a", "gpus": ["NVIDIA H100", "NVIDIA H200"], "may_request": False}
    assert client.get("/api/v1/rerun-token", headers={"Authorization": f"Bearer {asking}"}).get_json() == {
        "host": "b", "gpus": None, "may_request": True}
    assert runner.invoke(args=["tokens", "revoke", "a"]).exit_code == 0
    for headers in ({"Authorization": f"Bearer {scoped}"}, {"Authorization": "Bearer kih_unknown"}, {}):
        refused = client.get("/api/v1/rerun-token", headers=headers)
        assert refused.status_code == 401 and "rerun-host token" in refused.get_json()["error"]


@pytest.mark.parametrize("change, reason", [
    ({"family": "no_such_family"}, "no plugin on this server declares the family 'no_such_family'"),
    ({"implementation": {"name": "cheater", "project": "x", "revision": "1", "details": {}}},
     "no plugin on this server declares the implementation 'cheater'"),
])
def test_only_what_the_servers_plugins_declare(reference, runner, client, change, reason):
    token = token_for(runner, "a", "--host", "h200-a")
    response = post(client, token, {**rerun_result(reference, observed_at=stamp(-10)), **change})
    assert response.status_code == 400 and reason in response.get_json()["error"]
    assert not reruns()


def test_implementations_unavailable_on_the_server_are_accepted(reference, runner, client):
    """Liger's implementations are declared (as unavailable) also where liger_kernel does not import; the server
    accepts them from hosts that have it."""
    token = token_for(runner, "a", "--host", "h200-a")
    assert post(client, token, rerun_result(reference, "liger", observed_at=stamp(-10))).status_code == 201


def test_implementations_added_by_an_implementation_plugin_are_accepted(reference, runner, client, tmp_path,
                                                                       monkeypatch):
    (tmp_path / "neighborhood_kernel.py").write_text("""
from runners import hookimpl
from runners.types import AddedImplementation, Implementation

@hookimpl
def kernel_implementations():
    return [AddedImplementation(family="fused_neighborhood_attention", target="cuda",
                                implementation=Implementation("authors_kernel", "A kernel author"),
                                prepare_pass=lambda implementation, workload, pass_: None)]
""")
    monkeypatch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(tmp_path))
    token = token_for(runner, "a", "--host", "h200-a")
    assert post(client, token, rerun_result(reference, "authors_kernel", observed_at=stamp(-10))).status_code == 201


def timing_changed(reference, **changes):
    result = rerun_result(reference, observed_at=stamp(-10))
    result["timing"].update(changes)
    return result


@pytest.mark.parametrize("changes, reason", [
    ({"p20": 90_000.0}, "p20 <= median <= p80"),
    ({"p80": 70_000.0}, "p20 <= median <= p80"),
    ({"median": 6.0, "p20": 5.0, "p80": 7.0}, "within the samples"),
    ({"p80": 1e9}, "within the samples"),
    ({"median": -1.0}, "median"),
    ({"trials": 4}, "trials"),
    ({"samplesPerTrial": 5}, "samplesPerTrial"),
    ({"hostExposedSamples": 5 * 20 + 1}, "hostExposedSamples"),
])
def test_timing_must_be_sane(reference, runner, client, changes, reason):
    token = token_for(runner, "a", "--host", "h200-a")
    response = post(client, token, timing_changed(reference, **changes))
    assert response.status_code == 400 and reason in response.get_json()["error"]
    assert not reruns()


def test_sample_counts_match_the_protocol(reference, runner, client):
    token = token_for(runner, "a", "--host", "h200-a")
    result = rerun_result(reference, observed_at=stamp(-10))
    result["protocol"]["samplesPerTrial"] = 19
    response = post(client, token, result)
    assert response.status_code == 400 and "protocol" in response.get_json()["error"]
    passed_without_timing = {**rerun_result(reference, observed_at=stamp(-10)), "timing": None}
    assert post(client, token, passed_without_timing).status_code == 400
