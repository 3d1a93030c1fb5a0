"""The comparison page: members side by side on one axis, ratios, noise, related groups, twin."""

import re

import pytest

from app.models import ComparisonGroup, Run
from app.importers.kernelindex_rerun import record_rerun_results

from .factories import rerun_result
from .pages_support import find_run, in_order, reference_run, text_of


def group_of(run) -> str:
    """The hex digest that names ``run``'s comparison group in URLs."""
    return run.comparison_key_id.split(":")[1]


@pytest.fixture
def reference_group(small_app) -> str:
    """The reference run's group: fused neighborhood attention at speed on the H100 80GB HBM3, torch and liger."""
    return group_of(reference_run(small_app))


def test_members_side_by_side_with_ratio_to_the_leader(reference_group, client):
    text = text_of(client.get(f"/comparisons/{reference_group}").get_data(as_text=True))
    # one unit for the whole table: the leader's 314960 ns reads 0.315 ms beside 84.6 ms
    assert in_order(text, "Members", "#1", "Liger-Kernel", "0.315 ms", "#1", "#2", "PyTorch", "84.6 ms", "268× slower")
    assert in_order(text, "What the members share", "kernel", "Fused neighborhood attention", "workload",
                    "seq = 1024", "pass", "forward", "metric", "speed", "gpu", "NVIDIA H100 80GB HBM3",
                    "protocol family", "liger_kernel_bench", "evidence", "source-native")


def test_overlapping_spreads_read_within_noise_and_equal_medians_tie(small_app, client):
    key = group_of(find_run(small_app, kernel="multi_token_attention", implementation="torch_compile"))
    page = client.get(f"/comparisons/{key}.json").get_json()
    standings = {row["implementation"]: (row["standing"], row["ratio"], row["direction"]) for row in page["rows"]}
    assert standings["torch.compile"] == ("ratio", 1.25, "slower")
    assert sorted(standing for standing, _, _ in [standings["PyTorch"], standings["Liger-Kernel"]]) == ["leader", "tied"]
    assert [row["rank"] for row in page["rows"]] == [1, 1, 3]


def test_spread_bars_share_one_log_axis_when_the_group_spans_more_than_ten_times(reference_group, client):
    html = client.get(f"/comparisons/{reference_group}").get_data(as_text=True)
    assert html.count('class="spread"') == 2 and "Spread on a shared logarithmic axis (0.299 ms – 88.8 ms)" in html
    twin = client.get(f"/comparisons/{reference_group}.json").get_json()
    leader_bar, other_bar = (re.search(rf'id="run-{row["id"]}".*?<rect x="([0-9.]+)"', html, re.S).group(1)
                             for row in twin["rows"])
    assert float(leader_bar) < 5 and float(other_bar) > 90  # both ends visible, 268× apart


def test_spread_bars_stay_linear_within_ten_times(small_app, client):
    key = group_of(find_run(small_app, kernel="multi_token_attention", implementation="torch_compile"))
    twin = client.get(f"/comparisons/{key}.json").get_json()
    assert twin["axis"]["scale"] == "linear" and twin["axis"]["min"].startswith("0 ")


def test_the_run_you_came_from_is_marked(small_app, reference_group, client):
    run = reference_run(small_app)
    html = client.get(f"/comparisons/{reference_group}?from={run.id}").get_data(as_text=True)
    assert f'<tr id="run-{run.id}" class="current" aria-current="true">' in html
    assert "you came from here" in html
    run_page = client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert f"?from={run.id}#run-" in run_page


def test_upstream_ratios_sit_beside_the_rerun_ratios(small_app, reference_group, client):
    source = reference_run(small_app)
    leader = find_run(small_app, kernel="fused_neighborhood_attention", implementation="liger",
                      gpu="NVIDIA H100 80GB HBM3", metric="speed")
    with small_app.app_context():
        record_rerun_results([rerun_result(source, "torch", median=80_000_000.0),
                              rerun_result(leader, "liger", median=320_000.0)],
                             families={})
    text = text_of(client.get(f"/comparisons/{reference_group}").get_data(as_text=True))
    assert in_order(text, "Upstream and KernelIndex rerun ratios", "upstream: Liger-Kernel 268× faster than PyTorch on",
                    "NVIDIA H100 80GB HBM3", "KernelIndex rerun on", "NVIDIA H200", "250×")
    agreement = client.get(f"/comparisons/{reference_group}.json").get_json()["agreements"][0]["rows"][0]
    assert (agreement["upstream"], agreement["rerun"], agreement["disagree"]) == (268.0, 250.0, True)


def test_related_groups_list_other_gpus_and_reruns(small_app, reference_group, client):
    source = reference_run(small_app)
    with small_app.app_context():
        record_rerun_results([rerun_result(source)], families={})
    text = text_of(client.get(f"/comparisons/{reference_group}").get_data(as_text=True))
    assert in_order(text, "The same workload elsewhere", "NVIDIA H100 PCIe · source-native")
    assert "NVIDIA H200 · KernelIndex reruns" in text
    assert "memory" not in text.split("The same workload elsewhere")[1]  # another metric is not this comparison


def test_json_twin_extends_the_api_shape(reference_group, client):
    twin = client.get(f"/comparisons/{reference_group}", headers={"Accept": "application/json"}).get_json()
    api = client.get(f"/api/v1/comparisons/{reference_group}").get_json()
    assert {name: twin[name] for name in api} == api
    assert [(row["standing"], row["ratio"]) for row in twin["rows"]] == [("leader", 1.0), ("ratio", 268.0)]
    assert [(row["median"], row["unit"]) for row in twin["rows"]] == [(0.315, "ms"), (84.6, "ms")]


@pytest.mark.parametrize("key, status", [("0" * 64, 404), ("sha256:" + "0" * 64, 404), ("nothex", 400),
                                         ("0" * 63, 400), ("A" * 64, 400)])
def test_bad_keys_are_clear_4xx(small_app, client, key, status):
    response = client.get(f"/comparisons/{key}")
    assert response.status_code == status
    assert "comparison" in response.get_data(as_text=True)
    if status == 400:  # upper-case hex is hex: the message says which digits
        assert "64 lower-case hex digits" in response.get_data(as_text=True)


def test_group_with_no_current_members_says_so(small_app, client):
    with small_app.app_context():
        group = ComparisonGroup.get(ComparisonGroup.kernel == "cross_entropy")
        Run.update(status="failed").where(Run.comparison_key == group.key).execute()
    text = text_of(client.get(f"/comparisons/{group.key.split(':')[1]}").get_data(as_text=True))
    assert "No current members" in text


def test_a_run_you_came_from_that_does_not_rank_is_named_with_why(small_app, client):
    """An invalidated, superseded or failed run's page links its comparison with ?from=, but the comparison, which
    lists ranked members only, showed no sign of it: the reader could not tell whether the link had worked."""
    with small_app.app_context():
        reference = reference_run(small_app)
        honest, failed = record_rerun_results([rerun_result(reference, "torch"),
                                               rerun_result(reference, "liger", status="failed")]).created
        group = group_of(Run.get_by_id(failed))
    page = client.get(f"/comparisons/{group}?from={failed}")
    assert in_order(text_of(page.get_data(as_text=True)), f"Run {failed}",
                    ", which you came from, is in this group but not ranked: the run failed.")
    twin = client.get(f"/comparisons/{group}.json?from={failed}").get_json()
    assert twin["unranked_origin"] == {"id": failed, "url": f"/runs/{failed}", "reason": "the run failed"}
    assert client.get(f"/comparisons/{group}.json?from={honest}").get_json()["unranked_origin"] is None


def test_the_page_says_when_members_share_a_rank(small_app, reference_group, client):
    """Two rerun members 1.7% apart, their p20–p80 spreads apart too, both read '#4' with nothing on the page saying
    why: the page spoke of 'within noise' (overlapping spreads) only."""
    source = text_of(client.get(f"/comparisons/{reference_group}").get_data(as_text=True))
    assert "Members share a rank only when their medians are equal" in source
    with small_app.app_context():
        [rerun] = record_rerun_results([rerun_result(reference_run(small_app), "torch")]).created
        group = group_of(Run.get_by_id(rerun))
    reruns = text_of(client.get(f"/comparisons/{group}").get_data(as_text=True))
    assert ("shares the rank of the first one above it when the evidence cannot separate them: medians within 2%, "
            "or a 95% bootstrap interval of their ratio over trials that holds 1.") in reruns
    twin = client.get(f"/comparisons/{group}.json").get_json()  # its ranks, and when they tie, as the page says
    assert twin["tie_rule"].startswith("A member shares the rank of the first one above it")
