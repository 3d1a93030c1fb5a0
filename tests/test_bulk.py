"""Bulk downloads: every current run as CSV and as JSON Lines, streamed in chunks."""

import csv
import io
import json

import pytest

from app import bulk
from app.models import Run

from .conftest import import_small


def current_ids(app) -> list:
    """The current runs' ids in the downloads' order: by measurement, each measurement's one current run."""
    with app.app_context():
        return [run.id for run in Run.current().order_by(Run.measurement_key)]


def test_csv_lists_every_current_run_once_with_the_documented_columns(small_app, runner, client):
    import_small(runner, "liger_small_later.csv")  # supersedes one run: it leaves the download
    response = client.get("/downloads/runs.csv")
    assert response.status_code == 200 and response.mimetype == "text/csv" and response.is_streamed
    assert "attachment" in response.headers["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert tuple(rows[0]) == bulk.COLUMNS
    assert [row["id"] for row in rows] == current_ids(small_app)
    assert json.loads(rows[0]["parameters"]) and float(rows[0]["median"]) > 0


def test_json_lines_match_the_csv(small_app, client):
    lines = client.get("/downloads/runs.jsonl").get_data(as_text=True).splitlines()
    objects = [json.loads(line) for line in lines]
    assert [o["id"] for o in objects] == current_ids(small_app)
    assert isinstance(objects[0]["parameters"], dict) and objects[0]["observed_at"].endswith("Z")


def test_rows_are_read_in_chunks_across_chunk_boundaries_skipping_superseded_runs(small_app, runner):
    import_small(runner, "liger_small_later.csv")
    with small_app.app_context():
        assert Run.select().count() > len(current_ids(small_app))
        assert [row["id"] for row in bulk.current_rows(chunk=2)] == current_ids(small_app)


@pytest.mark.parametrize("read_before", [1, 3, 5])
def test_an_import_during_a_download_gives_each_measurement_once(small_app, runner, read_before):
    """The later file supersedes runs while chunks are being read: each measurement comes out once, old or new."""
    with small_app.app_context():
        before = {run.measurement_key for run in Run.current()}
        rows = bulk.current_rows(chunk=2)
        ids = [next(rows)["id"] for _ in range(read_before)]
        import_small(runner, "liger_small_later.csv")
        ids += [row["id"] for row in rows]
        keys = [Run.get_by_id(run_id).measurement_key for run_id in ids]
    assert len(keys) == len(set(keys)) and before <= set(keys)


def test_downloads_are_linked_from_home_and_described_in_openapi(small_app, client):
    home = client.get("/").get_data(as_text=True)
    assert 'href="/downloads/runs.csv"' in home and 'href="/downloads/runs.jsonl"' in home
    document = client.get("/api/openapi.json").get_json()
    assert {"/downloads/runs.csv", "/downloads/runs.jsonl"} <= set(document["paths"])
    assert set(document["components"]["schemas"]["BulkRun"]["properties"]) == set(bulk.COLUMNS)
