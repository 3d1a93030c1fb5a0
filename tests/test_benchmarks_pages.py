"""The million-run page benchmark's database builder, at a small size: its synthetic rows must fit the schema the
migrations make today (a column added by a migration once broke every build)."""

import shutil
import sqlite3

from benchmarks.pages import RUN_COLUMNS, build

from .conftest import DATA, make_app


def test_the_builder_fills_todays_schema_and_the_pages_it_measures_answer(tmp_path):
    liger = tmp_path / "liger"
    liger.mkdir()
    shutil.copy(DATA / "liger_small.csv", liger / "all_benchmark_data.csv")
    path = tmp_path / "pages.db"
    build(path, 2_000, liger)
    connection = sqlite3.connect(path)
    columns = {row[1] for row in connection.execute("PRAGMA table_info(run)")}
    assert set(RUN_COLUMNS) <= columns
    assert connection.execute("SELECT COUNT(*) FROM run").fetchone()[0] == 2_000
    comparison_key, kernel = connection.execute(
        "SELECT comparison_key, kernel FROM run WHERE kernel LIKE 'synthetic%' AND rank = 1 LIMIT 1").fetchone()
    [imported] = connection.execute("SELECT id FROM run WHERE kernel NOT LIKE 'synthetic%' LIMIT 1").fetchone()
    connection.close()
    client = make_app(f"sqlite:///{path}").test_client()
    for url in (f"/runs/{imported}", f"/comparisons/{comparison_key.split(':')[1]}", f"/families/{kernel}",
                f"/search?q={kernel}", "/downloads/runs.csv"):
        assert client.get(url).status_code == 200, url
