"""Evidence cards: SVG badges of a run and of a family, and the Markdown to embed a run's."""

import html

from app.models import Run
from app.importers.kernelindex_rerun import record_rerun_results

from .factories import rerun_result
from .pages_support import reference_run


def test_run_badge_states_evidence_and_median(small_app, client):
    run = reference_run(small_app)
    response = client.get(f"/runs/{run.id}/badge.svg")
    assert response.status_code == 200 and response.mimetype == "image/svg+xml"
    svg = response.get_data(as_text=True)
    assert "Source-reported · 84.6 ms" in svg and "reproduced" not in svg and "style=" not in svg


def test_an_agreeing_rerun_adds_reproduced_within(small_app, client):
    run = reference_run(small_app)
    with small_app.app_context():
        record_rerun_results([rerun_result(run, "torch", median=run.median * 1.03)], families={})
    assert "84.6 ms · reproduced within 3% on NVIDIA H200" in client.get(f"/runs/{run.id}/badge.svg").get_data(
        as_text=True)
    family = client.get("/families/fused_neighborhood_attention/badge.svg").get_data(as_text=True)
    assert "KernelIndex rerun" in family and "runs · reproduced within 3%" in family


def test_a_disagreeing_rerun_adds_nothing(small_app, client):
    run = reference_run(small_app)
    with small_app.app_context():
        record_rerun_results([rerun_result(run, "torch", median=run.median * 2)], families={})
    assert "reproduced" not in client.get(f"/runs/{run.id}/badge.svg").get_data(as_text=True)


def test_run_page_offers_the_markdown_snippet(small_app, client):
    run = reference_run(small_app)
    snippet = client.get(f"/runs/{run.id}.json").get_json()["badge"]["markdown"]
    assert snippet.startswith("[![KernelIndex: Source-reported · 84.6 ms]")
    assert snippet.endswith(f"(http://localhost/runs/{run.id}/badge.svg)](http://localhost/runs/{run.id})")
    page = client.get(f"/runs/{run.id}").get_data(as_text=True)
    assert 'data-copy="cite-badge"' in page
    assert f'<pre id="cite-badge" class="citation">{html.escape(snippet, quote=False)}</pre>' in page
    assert f'<img src="/runs/{run.id}/badge.svg"' in page


def test_unknown_badges_are_404(small_app, client):
    assert client.get("/runs/000000000000/badge.svg").status_code == 404
    assert client.get("/families/nope/badge.svg").status_code == 404
