"""Run and comparison pages show what makes a comparison fair: each rerun's math mode, its host-inclusive
median beside the device-only primary, whether it waits on the host, and a note when a group mixes modes."""

import json
from pathlib import Path

from app.importers.kernelindex_rerun import record_rerun_results
from app.models import Run

from .pages_support import text_of

BUNDLE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200" / "h200-fair-fna-forward-reference.jsonl"


def fair_reruns(app) -> dict[str, Run]:
    """The H200 fair-comparison bundle of the reference FNA workload (Liger left out: it needs its library)."""
    results = [json.loads(line) for line in BUNDLE.read_text().splitlines()]
    results = [result for result in results if not result["implementation"]["name"].startswith("liger")]
    for result in results:
        result["rerunOf"] = None  # the upstream run is not in this database
    with app.app_context():
        created = record_rerun_results(results).created
        return {run.implementation: run for run in Run.select().where(Run.id.in_(created))}


def test_a_cuda_rerun_page_shows_its_math_mode_host_inclusive_median_and_host_waits(app, client):
    reruns = fair_reruns(app)
    ours = text_of(client.get(f"/runs/{reruns['kernelindex_triton'].id}").get_data(as_text=True))
    assert "Math mode: tf32" in ours and "No host synchronization inside the timed call" in ours
    assert "Host-inclusive median 207 µs (5.7× the device time)" in ours
    upstream_module = text_of(client.get(f"/runs/{reruns['torch'].id}").get_data(as_text=True))
    assert "Math mode: ieee-fp32" in upstream_module and "Waits on the host inside the timed call" in upstream_module
    twin = client.get(f"/runs/{reruns['torch_compile+tf32'].id}.json").get_json()
    assert twin["execution"][0] == "Math mode: tf32"


def test_a_group_that_mixes_math_modes_says_so_and_labels_every_member(app, client):
    reruns = fair_reruns(app)
    key = reruns["kernelindex_triton"].comparison_key_id.removeprefix("sha256:")
    page = client.get(f"/comparisons/{key}.json").get_json()
    modes = {row["implementation_name"]: row["math_mode"] for row in page["rows"]}
    assert modes == {"kernelindex_triton": "tf32", "torch_compile+tf32": "tf32", "torch_compile": "ieee-fp32",
                     "torch": "ieee-fp32", "torch+tf32": "tf32"}
    assert page["math_modes_note"].startswith("Mixed math modes (ieee-fp32, tf32)")
    assert all(row["host_median_text"] for row in page["rows"])
    html = text_of(client.get(f"/comparisons/{key}").get_data(as_text=True))
    assert "Mixed math modes" in html and "Host-inclusive" in html


def test_source_rows_claim_no_math_mode(small_app, client):
    from .pages_support import reference_run

    twin = client.get(f"/runs/{reference_run(small_app).id}.json").get_json()
    assert twin["execution"] == []
