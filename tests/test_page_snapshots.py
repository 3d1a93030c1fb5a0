"""Snapshots of the JSON twins of a fixed list of pages, on every upstream CSV plus the committed rerun bundles.

A refactor must not change what a page says: each twin is compared byte for byte with
``tests/data/snapshots/<name>.json``. Values that depend on when this database was
filled (import times) or the page read (a citation's access date) are masked first. After a deliberate change of a page, rewrite
the snapshots with ``KERNELINDEX_WRITE_SNAPSHOTS=1 pytest tests/test_page_snapshots.py``
and review the diff.
"""

import json
import os
import re
from datetime import date
from pathlib import Path

import pytest

from app import create_app, db

from .conftest import LIGER_DATA, fresh_database_url, liger_files, make_app
from .test_manifests import FNA_ID, MTA_ID

REPOSITORY = Path(__file__).resolve().parents[1]
SNAPSHOTS = REPOSITORY / "tests" / "data" / "snapshots"
BUNDLES = sorted(str(path) for path in (REPOSITORY / "benchmarks" / "results").rglob("*.jsonl"))
FNA = "fused_neighborhood_attention"
MTA = "multi_token_attention"
TODAY = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?)?")


@pytest.fixture(scope="module")
def snapshot_app(tmp_path_factory):
    """Every upstream CSV and every committed rerun bundle, imported once."""
    if not LIGER_DATA.is_dir():
        pytest.skip("../shared/data/liger is not present")
    url = fresh_database_url("ki_test_snapshots", tmp_path_factory.mktemp("snapshots"))
    runner = make_app(url).test_cli_runner()
    for args in (["import", "liger", *liger_files()], ["import", "kernelindex", *BUNDLES]):
        result = runner.invoke(args=args)
        assert result.exit_code == 0, result.output
    app = create_app({"TESTING": True, "DATABASE_URL": url, "SECRET_KEY": "test"})
    yield app
    if not db.database.is_closed():
        db.database.close()


def twin(client, url: str) -> dict:
    response = client.get(url, headers={"Accept": "application/json"})
    assert response.status_code == 200, (url, response.get_data(as_text=True)[:500])
    return response.get_json()


def reference_urls(client) -> dict[str, str]:
    """The pages to pin: both reference runs, a rerun, their comparisons, family pages, home, search, plugins."""
    urls = {}
    for label, external_id in (("fna", FNA_ID), ("mta", MTA_ID)):
        found = twin(client, f"/api/v1/runs?external_id={external_id}")["items"]
        run_id = found[0]["id"]
        urls[f"run_{label}"] = f"/runs/{run_id}.json"
        urls[f"api_run_{label}"] = f"/api/v1/runs/{run_id}"
        key = twin(client, f"/api/v1/runs/{run_id}")["comparison"]["key"].removeprefix("sha256:")
        urls[f"comparison_{label}"] = f"/comparisons/{key}.json"
        urls[f"api_comparison_{label}"] = f"/api/v1/comparisons/{key}"
    reruns = twin(client, f"/api/v1/runs?kernel={FNA}&source=kernelindex&pass=forward&implementation=liger")
    rerun_id = reruns["items"][0]["id"]
    urls["run_fna_rerun"] = f"/runs/{rerun_id}.json"
    urls["family_fna"] = f"/families/{FNA}.json"
    urls["family_fna_filtered"] = f"/families/{FNA}.json?gpu=NVIDIA+H100+80GB+HBM3&pass=backward&sort=median&page=1"
    urls["family_mta"] = f"/families/{MTA}.json"
    urls["family_mta_filtered"] = f"/families/{MTA}.json?gpu=NVIDIA+H200&pass=forward&order=desc"
    urls["home"] = "/index.json"
    urls["search"] = "/search.json?q=rms_norm+h100"
    urls["search_page_2"] = "/search.json?q=attention&page=2"
    urls["plugins"] = "/plugins.json"
    urls["api_runs"] = f"/api/v1/runs?kernel={MTA}&per_page=5"
    return urls


ACCESSED_PARTS = re.compile(r'"accessed": \{\s*"date-parts": \[\s*\[[\s\d,]*\]\s*\]\s*\}')
IMPORT_TIME_KEYS = ("imported", "imported_at", "accessed", "published", "created_at", "received_at")


def masked(value, key=""):
    """The twin with import times and the checkout's location replaced: they say when and where this
    database was filled, not what a page shows."""
    if isinstance(value, dict):
        return {k: masked(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(v, key) for v in value]
    if isinstance(value, str) and key in IMPORT_TIME_KEYS and TODAY.fullmatch(value):
        return "<import time>"
    if isinstance(value, str):
        # A citation's access date is the day the page is read; every other date is data (a bundle's from the day it
        # was measured must not be masked on that day alone, or the snapshot breaks the next).
        value = ACCESSED_PARTS.sub('"accessed": "<today>"', value)  # CSL-JSON's date-parts of today
        return (value.replace(str(LIGER_DATA), "<liger data>").replace(str(REPOSITORY), "<repository>")
                .replace(f"accessed {date.today().isoformat()}", "accessed <today>"))
    return value


def test_json_twins_match_their_snapshots(snapshot_app):
    client = snapshot_app.test_client()
    write = os.environ.get("KERNELINDEX_WRITE_SNAPSHOTS") == "1"
    SNAPSHOTS.mkdir(parents=True, exist_ok=True)
    mismatched = []
    for name, url in reference_urls(client).items():
        text = json.dumps({"url": url, "twin": masked(twin(client, url))}, indent=1, sort_keys=True,
                          ensure_ascii=False) + "\n"
        path = SNAPSHOTS / f"{name}.json"
        if write:
            path.write_text(text, encoding="utf-8")
        elif not path.exists() or path.read_text(encoding="utf-8") != text:
            mismatched.append(name)
    assert not mismatched, f"JSON twins differ from tests/data/snapshots: {mismatched}"
