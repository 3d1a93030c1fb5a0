"""The comparison page: members side by side on one axis, ratios, noise, related groups, twin."""

import pytest

from app.models import ComparisonGroup, Run
from app.reruns import record_rerun_results

from .factories import rerun_result
from .pages_support import import_small, in_order, reference_run, text_of


@pytest.fixture
def imported(app, runner):
    import_small(runner)
    return app


def group_of(app, **where):
    with app.app_context():
        run = Run.get(*[getattr(Run, name) == value for name, value in where.items()])
        return run.comparison_key_id.split(":")[1]


def test_members_side_by_side_with_ratio_to_the_leader(imported, client):
    key = group_of(imported, kernel="fused_neighborhood_attention", gpu="NVIDIA H100 80GB HBM3", metric="speed",
                   implementation="torch")
    text = text_of(client.get(f"/comparisons/{key}").get_data(as_text=True))
    # one unit for the whole table: the leader's 314960 ns reads 0.315 ms beside 84.6 ms
    assert in_order(text, "Members", "#1", "liger", "0.315 ms", "#1", "#2", "PyTorch", "84.6 ms", "268× slower")
    assert in_order(text, "What the members share", "kernel", "Fused neighborhood attention", "workload",
                    "seq = 1024", "pass", "forward", "metric", "speed", "gpu", "NVIDIA H100 80GB HBM3",
                    "protocol family", "liger_kernel_bench", "evidence", "source-native")


def test_overlapping_spreads_read_within_noise_and_equal_medians_tie(imported, client):
    key = group_of(imported, kernel="multi_token_attention", implementation="torch_compile")
    page = client.get(f"/comparisons/{key}.json").get_json()
    standings = {row["implementation"]: row["standing"] for row in page["rows"]}
    assert standings["torch.compile"] == "1.25× slower"
    assert sorted([standings["PyTorch"], standings["liger"]]) == ["#1", "tied with #1"]
    assert [row["rank"] for row in page["rows"]] == [1, 1, 3]


def test_spread_bars_share_one_axis(imported, client):
    key = group_of(imported, kernel="fused_neighborhood_attention", gpu="NVIDIA H100 80GB HBM3", metric="speed",
                   implementation="torch")
    html = client.get(f"/comparisons/{key}").get_data(as_text=True)
    assert html.count('class="spread"') == 2 and "Spread on a shared axis (0 – " in html


def test_related_groups_list_other_gpus_and_reruns(imported, client):
    source = reference_run(imported)
    with imported.app_context():
        record_rerun_results([rerun_result(source)], families={})
    key = group_of(imported, kernel="fused_neighborhood_attention", gpu="NVIDIA H100 80GB HBM3", metric="speed",
                   implementation="torch")
    text = text_of(client.get(f"/comparisons/{key}").get_data(as_text=True))
    assert in_order(text, "The same workload elsewhere", "NVIDIA H100 PCIe · source-native")
    assert "NVIDIA H200 · KernelIndex reruns" in text
    assert "memory" not in text.split("The same workload elsewhere")[1]  # another metric is not this comparison


def test_json_twin_extends_the_api_shape(imported, client):
    key = group_of(imported, kernel="fused_neighborhood_attention", gpu="NVIDIA H100 80GB HBM3", metric="speed",
                   implementation="torch")
    twin = client.get(f"/comparisons/{key}", headers={"Accept": "application/json"}).get_json()
    api = client.get(f"/api/v1/comparisons/{key}").get_json()
    assert {name: twin[name] for name in api} == api
    assert [row["standing"] for row in twin["rows"]] == ["#1", "268× slower"]


@pytest.mark.parametrize("key, status", [("0" * 64, 404), ("sha256:" + "0" * 64, 404), ("nothex", 400),
                                         ("0" * 63, 400)])
def test_bad_keys_are_clear_4xx(imported, client, key, status):
    response = client.get(f"/comparisons/{key}")
    assert response.status_code == status
    assert "comparison" in response.get_data(as_text=True)


def test_group_with_no_current_members_says_so(imported, client):
    with imported.app_context():
        group = ComparisonGroup.get(ComparisonGroup.kernel == "cross_entropy")
        Run.update(status="failed").where(Run.comparison_key == group.key).execute()
    text = text_of(client.get(f"/comparisons/{group.key.split(':')[1]}").get_data(as_text=True))
    assert "No current members" in text
