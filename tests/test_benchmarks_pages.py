"""The million-run benchmarks' database builder and download streamer, at a small size: the synthetic rows must fit
the schema the migrations make today (a column added by a migration once broke every build)."""

import shutil
import sqlite3

import pytest

from app import create_app
from benchmarks.bulk_download import stream
from benchmarks.pages import IN_PROCESS, RUN_COLUMNS, build

from .conftest import DATA


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pages")
    liger = folder / "liger"
    liger.mkdir()
    shutil.copy(DATA / "liger_small.csv", liger / "all_benchmark_data.csv")
    build(folder / "pages.db", 2_000, liger)
    return folder / "pages.db"


def test_the_builder_fills_todays_schema_and_the_pages_it_measures_answer(built):
    connection = sqlite3.connect(built)
    columns = {row[1] for row in connection.execute("PRAGMA table_info(run)")}
    assert set(RUN_COLUMNS) <= columns
    assert connection.execute("SELECT COUNT(*) FROM run").fetchone()[0] == 2_000
    comparison_key, kernel = connection.execute(
        "SELECT comparison_key, kernel FROM run WHERE kernel LIKE 'synthetic%' AND rank = 1 LIMIT 1").fetchone()
    [imported] = connection.execute("SELECT id FROM run WHERE kernel NOT LIKE 'synthetic%' LIMIT 1").fetchone()
    connection.close()
    client = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{built}"}).test_client()
    for url in (f"/runs/{imported}", f"/comparisons/{comparison_key.split(':')[1]}", f"/families/{kernel}",
                f"/search?q={kernel}"):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("url", ["/downloads/runs.csv", "/downloads/runs.jsonl"])
def test_the_download_streamer_counts_every_current_run(built, url):
    connection = sqlite3.connect(built)
    [current] = connection.execute("SELECT COUNT(*) FROM run WHERE superseded_by_id IS NULL").fetchone()
    connection.close()
    client = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{built}"}).test_client()
    streamed = stream(client, url)
    assert streamed["rows"] == current and streamed["mb"] > 0
