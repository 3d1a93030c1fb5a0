"""The run page: every section of the reference page in order, its figures, fragment and JSON twin."""

import json

import pytest

from app.models import Run
from app.importers.kernelindex_rerun import record_rerun_results

from .factories import correctness_record, rerun_result, write_liger_csv
from .conftest import import_csv, import_small
from .pages_support import HTMX, in_order, reference_run, text_of
from .test_manifests import FNA_ID, reference_page_manifest


def test_reference_run_page_has_every_section_in_order_with_readable_figures(small_app, client):
    run = reference_run(small_app)
    response = client.get(f"/runs/{run.id}")
    assert response.status_code == 200
    text = text_of(response.get_data(as_text=True))
    assert in_order(
        text,
        f"Run {run.id}",
        "Primary measurement", "84.6", "ms", "median",
        "Rank 2 in its comparison group · source-native comparison · observed 2025-05-27",
        "Compare with #1 →",
        "ms 20 84.55020904541016 · ms 50 84.55020904541016 · ms 80 84.55020904541016",
        "Identity", "implementation", "PyTorch", "project", "PyTorch", "revision", "unknown",
        "workload", "seq = 1024 · batch = 2 · heads = 8 · hidden = 512 · dilation = 2 · kernel_size = 7 · fp32",
        "comparison key", run.comparison_key_id[:23] + "…",
        "source", "Liger-Kernel benchmarks", "external id", FNA_ID, run.digest[:30] + "…",
        "Correctness", "Marked passed by the source; the correctness policy was not published.",
        "Workload", "seq", "1024", "batch", "2", "heads", "8", "hidden", "512", "dilation", "2", "kernel_size", "7",
        "definition comparator", "not_asserted",
        "Measurements", "latency · median", "84.6 ms", "latency · p20", "84.6 ms", "latency · p80", "84.6 ms",
        "Protocol", "harness", "Liger-Kernel benchmark scripts", "timer", "cuda_events", "primaryStatistic",
        "median", "comparabilityFamily", "liger_kernel_bench",
        "Environment", "gpu", "NVIDIA H100 (sm_90)",
        "Artifacts", "No artifacts published with this run.",
        "Replications and notes", "No attestations yet.",
        "They never change the evidence level; only a KernelIndex-controlled rerun does.",
        "Canonical manifest", "Show manifest",
        "Cite this record (permalink, digest, access date)",
        "Report an issue with this run",
        "Published", "· Liger-Kernel benchmarks · BSD-2-Clause",
        "All results for Fused neighborhood attention →", "JSON",
    )
    assert "Add a reproduction or note" in text


def test_tensors_are_listed_shortest_name_first_when_the_family_is_known(small_app, client):
    run = reference_run(small_app)
    text = text_of(client.get(f"/runs/{run.id}").get_data(as_text=True))
    assert in_order(text, "k_bias", "fp32 [512]", "q_bias", "v_bias", "k_weight", "fp32 [512, 512]", "out_bias",
                    "q_weight", "v_weight", "out_weight", "hidden_states", "fp32 [2, 1024, 512]")


def test_the_leader_has_no_compare_link_and_says_rank_1(small_app, client):
    with small_app.app_context():
        leader = Run.get((Run.kernel == "fused_neighborhood_attention") & (Run.implementation == "liger")
                         & (Run.gpu == "NVIDIA H100 80GB HBM3") & (Run.metric == "speed"))
    text = text_of(client.get(f"/runs/{leader.id}").get_data(as_text=True))
    assert "Rank 1 in its comparison group" in text
    assert "Compare with #1" not in text
    assert "315 µs" in text  # 314960 ns as a person reads it


def test_compare_link_goes_to_the_group_with_both_members(small_app, client):
    run = reference_run(small_app)
    page = client.get(f"/runs/{run.id}").get_data(as_text=True)
    key = run.comparison_key_id.split(":")[1]
    assert f'href="/comparisons/{key}?from={run.id}#run-' in page
    comparison = text_of(client.get(f"/comparisons/{key}").get_data(as_text=True))
    assert "#1" in comparison and "#2" in comparison and run.id in comparison


def test_memory_runs_read_in_megabytes(small_app, client):
    with small_app.app_context():
        memory = Run.get(Run.metric == "memory")
    text = text_of(client.get(f"/runs/{memory.id}").get_data(as_text=True))
    assert "52.5MBmedian" in text.replace("\n", "")
    assert "memory · median\n52.5 MB" in text


def test_json_twin_by_suffix_and_by_accept_header(small_app, client):
    run = reference_run(small_app)
    by_suffix = client.get(f"/runs/{run.id}.json")
    by_accept = client.get(f"/runs/{run.id}", headers={"Accept": "application/json"})
    assert by_suffix.is_json and by_accept.is_json
    body = by_suffix.get_json()
    assert body == by_accept.get_json() | {"citation": body["citation"]}
    assert body["id"] == run.id
    assert body["primary"]["text"] == "84.6 ms"
    assert body["comparison"]["rank"] == 2
    assert body["rank_line"].startswith("Rank 2 in its comparison group")
    assert body["manifest"]["run"]["spec"]["timing"]["latencyNs"]["median"] == 84550209  # full precision
    assert body["correctness"]["published"] is False
    assert body["footer"]["license"] == "BSD-2-Clause"
    assert [row["label"] for row in body["workload_rows"]][:6] == ["seq", "batch", "heads", "hidden", "dilation",
                                                                    "kernel_size"]


def test_html_answers_vary_on_every_header_that_picks_page_or_fragment(small_app, client):
    """A history restore and a boosted link get the whole page where a plain HTMX swap gets a fragment: a cache
    that keyed on HX-Request alone would serve one for the other."""
    run = reference_run(small_app)
    response = client.get(f"/runs/{run.id}")
    assert {"HX-Request", "HX-Boosted", "HX-History-Restore-Request", "Accept"} <= set(
        name.strip() for name in response.headers["Vary"].split(","))
    assert response.mimetype == "text/html"
    manifest = f"/runs/{run.id}/manifest"
    swap = client.get(manifest, headers={"HX-Request": "true"}).text
    restore = client.get(manifest, headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}).text
    boosted = client.get(manifest, headers={"HX-Request": "true", "HX-Boosted": "true"}).text
    assert "<html" not in swap and "<html" in restore and "<html" in boosted
    assert "<title>" not in swap  # showing the manifest in place changes no address, so no tab title either


def test_manifest_fragment_page_and_download(small_app, client):
    run = reference_run(small_app)
    fragment = client.get(f"/runs/{run.id}/manifest", headers=HTMX)
    assert fragment.status_code == 200
    fragment_html = fragment.get_data(as_text=True)
    assert "<html" not in fragment_html and '"kind": "BenchmarkRun"' in fragment_html.replace("&#34;", '"')
    page = client.get(f"/runs/{run.id}/manifest").get_data(as_text=True)
    assert "<html" in page and "Back to run" in page
    download = client.get(f"/runs/{run.id}/manifest.json")
    assert "attachment" in download.headers["Content-Disposition"]
    bundle = json.loads(download.get_data(as_text=True))
    reference = reference_page_manifest()
    assert list(bundle) == ["run", "protocol", "environment", "workload", "implementation"]
    for kind in ("protocol", "environment"):
        assert bundle[kind] == reference[kind]
    assert bundle["run"]["spec"]["sourceNative"] == reference["run"]["spec"]["sourceNative"]
    assert list(bundle["run"]["spec"]) == list(reference["run"]["spec"])  # document order kept


def test_boosted_and_history_restore_requests_get_the_whole_page(small_app, client):
    run = reference_run(small_app)
    for headers in ({**HTMX, "HX-Boosted": "true"}, {**HTMX, "HX-History-Restore-Request": "true"}):
        assert "<html" in client.get(f"/runs/{run.id}/manifest", headers=headers).get_data(as_text=True)


def test_superseded_run_links_to_the_newer_observation_and_back(small_app, runner, client):
    import_small(runner, "liger_small_later.csv")
    old = reference_run(small_app)  # read after the later import, so it knows what supersedes it
    with small_app.app_context():
        newer = Run.get_by_id(old.superseded_by_id)
    old_text = text_of(client.get(f"/runs/{old.id}").get_data(as_text=True))
    assert "Not ranked: a newer observation of this measurement supersedes it" in old_text
    assert f"Superseded by run {newer.id}" in old_text
    assert "Compare with #1" not in old_text
    new_text = text_of(client.get(f"/runs/{newer.id}").get_data(as_text=True))
    assert f"Supersedes run {old.id}" in new_text and "80 ms" in new_text
    assert client.get(f"/runs/{old.id}.json").get_json()["superseded_by"]["id"] == newer.id


def test_rerun_page_shows_policy_error_throughput_and_links_both_ways(small_app, client):
    source = reference_run(small_app)
    with small_app.app_context():
        result = rerun_result(source, median=80_000.0)
        summary = record_rerun_results([result], families={})
        rerun = Run.get_by_id(summary.created[0])
    tflops = f"{result['cost']['flops'] / (rerun.median * 1e-9) / 1e12:.1f}"  # the workload's cost over the median
    text = text_of(client.get(f"/runs/{rerun.id}").get_data(as_text=True))
    assert in_order(text, "Primary measurement", "80", "µs", "KernelIndex rerun comparison",
                    "Correctness", "Passed the KernelIndex correctness policy: relative L2 error 0.0001 against "
                    "tolerance 0.005.", "policy digest", "sha256:", "KernelIndex correctness policy, version 3",
                    "Measurements", "achieved bandwidth", "157 GB/s", "achieved FLOP rate", f"{tflops} TFLOP/s",
                    "floor", "of floor", "peaks used", "H200 SXM datasheet", "tf32",
                    "Environment", "gpu", "NVIDIA H200 (sm_90)", "torch", "2.11.0",
                    "History of this measurement", f"run {source.id}")
    source_text = text_of(client.get(f"/runs/{source.id}").get_data(as_text=True))
    assert in_order(source_text, "KernelIndex reruns", f"run {rerun.id}", "80 µs")
    twin = client.get(f"/runs/{rerun.id}.json").get_json()
    assert twin["throughput"]["bandwidth"] == "157 GB/s"  # the workload's 12,591,104 bytes in 80 µs
    assert twin["correctness"]["published"] is True


def test_failed_rerun_says_why_it_has_no_figure(small_app, client):
    source = reference_run(small_app)
    with small_app.app_context():
        summary = record_rerun_results([rerun_result(source, status="failed")], families={})
    text = text_of(client.get(f"/runs/{summary.created[0]}").get_data(as_text=True))
    assert "No timing: the run failed" in text and "Not ranked: the run failed" in text
    assert "Failed the KernelIndex correctness policy" in text


def test_a_check_that_broke_off_before_its_first_trial_says_so_and_why(small_app, client):
    """An implementation that raised in its first correctness trial has no error to report: the sentence says the
    check broke off, with the harness's reason, not that 'no error was measured' as if none had been looked for."""
    source = reference_run(small_app)
    result = rerun_result(source, status="failed")
    why = "correctness trial 1: kernelindex_triton raised RuntimeError: boom"
    result["error"] = why
    result["correctness"] = {**result["correctness"], "passed": False, "relL2Error": None, "outputErrors": {},
                             "outputFigures": {}}
    with small_app.app_context():
        summary = record_rerun_results([result], families={})
    text = text_of(client.get(f"/runs/{summary.created[0]}").get_data(as_text=True))
    assert (f"Failed the KernelIndex correctness policy: the check broke off before any output was compared ({why})."
            in text)


def test_a_check_that_failed_within_its_tolerance_says_what_failed_it(small_app, client):
    """An implementation that raised in its second trial measured an error within the tolerance in its first: the
    sentence gave that error beside 'Failed' and no reason, as if the figures contradicted the verdict."""
    source = reference_run(small_app)
    result = rerun_result(source, status="failed")
    why = "correctness trial 2: kernelindex_triton raised RuntimeError: boom"
    result["error"] = why
    result["correctness"] = {**correctness_record(error=1e-4, trials=1), "trials": 3, "passed": False}
    with small_app.app_context():
        summary = record_rerun_results([result], families={})
    text = text_of(client.get(f"/runs/{summary.created[0]}").get_data(as_text=True))
    assert (f"Failed the KernelIndex correctness policy: relative L2 error 0.0001 against tolerance 0.005; it failed "
            f"on another count ({why})." in text)


@pytest.mark.parametrize("url", ["/runs/000000000000", "/runs/000000000000.json", "/runs/zz/manifest",
                                 "/runs/zz/manifest.json", "/runs/" + "a" * 300])
def test_unknown_runs_are_404_with_a_message(small_app, client, url):
    response = client.get(url)
    assert response.status_code == 404
    assert "no run with id" in response.get_data(as_text=True)
    if not url.endswith(".json"):  # a page in the site's layout, not a bare server message
        assert '<main id="content"' in response.get_data(as_text=True)


@pytest.mark.parametrize("headers", [{}, {"Accept": "application/json"}, HTMX])
def test_a_404_varies_on_every_header_that_picks_page_fragment_or_json(small_app, client, headers):
    """A 404 is cacheable by default, and one URL answers it as a page, a fragment or JSON: a cache that kept the JSON
    one for every client would show it to a browser in place of the page."""
    response = client.get("/runs/000000000000", headers=headers)
    assert response.status_code == 404
    assert {"HX-Request", "HX-Boosted", "HX-History-Restore-Request", "HX-Target", "Accept"} <= set(
        name.strip() for name in response.headers.get("Vary", "").split(","))


def test_citation_formats_carry_permalink_digest_and_access_date(small_app, client):
    run = reference_run(small_app)
    citation = client.get(f"/runs/{run.id}.json").get_json()["citation"]
    assert citation["permalink"].endswith(f"/runs/{run.id}")
    for form in ("plain", "bibtex"):
        assert run.digest in citation[form] and citation["accessed"] in citation[form]
    assert citation["bibtex"].startswith(f"@misc{{kernelindex_{run.id},")
    csl = json.loads(citation["csl_json"])
    assert csl["URL"] == citation["permalink"] and csl["type"] == "dataset" and run.digest in csl["note"]
    assert "-".join(f"{part:02d}" for part in csl["accessed"]["date-parts"][0]) == citation["accessed"]


def test_the_bibtex_title_escapes_what_latex_would_read_as_commands(app, runner, tmp_path, client):
    """An implementation without a display name goes in as named, and a ``_`` in it (the published data's
    liger_rms_norm, before it had a title) stopped a LaTeX build at "Missing $ inserted"; a GPU name may hold ``%``
    (which hid the rest of the line) or ``&``."""
    config = ('{"batch_size": 2, "hidden_size": 512, "num_heads": 8, "kernel_size": 7, "dilation": 2, '
              '"dtype": "torch.float32"}')
    import_csv(runner, write_liger_csv(tmp_path / "odd.csv", [[
        "fused_neighborhood_attention", "my_rms_norm", "forward", "speed", "ms", "seq_len", "seq", 1024, 1.0, 0.9,
        1.1, config, "GPU {50%} & #1 $5^2~\\", "2025-06-01 10:00:00", "0.5.10"]]))
    with app.app_context():
        run = Run.get()
    citation = client.get(f"/runs/{run.id}.json").get_json()["citation"]
    assert citation["bibtex"].splitlines()[1] == (
        r"  title        = {Fused neighborhood attention · my\_rms\_norm · forward · "
        r"GPU \{50\%\} \& \#1 \$5\^{}2\~{}\textbackslash{}},")
    assert "my_rms_norm · forward · GPU {50%} & #1 $5^2~\\" in citation["plain"]  # plain text keeps the names
