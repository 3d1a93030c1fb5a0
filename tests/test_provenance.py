"""Provenance as pages name it: source files by upstream path and commit, publication dates, pinned upstream."""

import shutil

import pytest

from app import upstream
from app.importers import ImportFailed, liger_csv
from app.models import Run, SourceFile
from app.upstream import file_name

from .conftest import DATA, import_csv
from .pages_support import text_of

HISTORY_COMMIT = "a53675ddeb531aea116f673f182806e6a3d387be"


def test_published_is_the_upstream_commit_date_of_the_file_not_the_import_date(app, runner, client, tmp_path):
    history_file = tmp_path / "2025-06-05_a53675dd.csv"
    shutil.copy(DATA / "liger_small.csv", history_file)
    result = runner.invoke(args=["import", "liger", str(history_file), "--commit", HISTORY_COMMIT.upper()])  # as typed
    assert result.exit_code == 0, result.output
    with app.app_context():
        run = Run.select().first()
    twin = client.get(f"/runs/{run.id}.json").get_json()
    assert twin["footer"]["published"] == "2025-06-05"
    home = client.get("/").get_data(as_text=True)
    assert str(tmp_path) not in home
    assert "at a53675dd (2025-06-05)" in text_of(home).replace("\n", " ")


def test_a_commit_given_again_for_a_file_recorded_without_one_is_recorded(app, runner, client, tmp_path):
    history_file = tmp_path / "2025-06-05_a53675dd.csv"
    shutil.copy(DATA / "liger_small.csv", history_file)
    import_csv(runner, history_file)
    again = runner.invoke(args=["import", "liger", str(history_file), "--commit", HISTORY_COMMIT])
    assert again.exit_code == 0, again.output
    assert "created 0, unchanged 9" in again.output
    assert f"commit {HISTORY_COMMIT[:12]} recorded for the file, imported before without one" in again.output
    with app.app_context():
        assert SourceFile.get().commit == HISTORY_COMMIT
        run = Run.select().first()
    assert client.get(f"/runs/{run.id}.json").get_json()["footer"]["published"] == "2025-06-05"


def test_a_commit_not_recorded_is_said(app, runner, tmp_path):
    """A file keeps the commit it was recorded at; one that brought no new run has no record to take one."""
    small = str(DATA / "liger_small.csv")
    import_csv(runner, small)
    assert runner.invoke(args=["import", "liger", small, "--commit", HISTORY_COMMIT]).exit_code == 0
    other_commit = runner.invoke(args=["import", "liger", small, "--commit", "fedcba9876"])
    reordered = tmp_path / "reordered.csv"
    header, *rows = (DATA / "liger_small.csv").read_text().splitlines(keepends=True)
    reordered.write_text(header + "".join(reversed(rows)))
    no_new_run = runner.invoke(args=["import", "liger", str(reordered), "--commit", "fedcba9876"])
    assert other_commit.exit_code == 0 and no_new_run.exit_code == 0, other_commit.output + no_new_run.output
    assert (f"commit fedcba9876 not recorded: the file was recorded at commit {HISTORY_COMMIT[:12]}, which it keeps"
            in other_commit.output)
    assert "created 0, unchanged 9" in no_new_run.output
    assert "commit fedcba9876 not recorded: the file brought no new run" in no_new_run.output
    with app.app_context():
        assert [source.commit for source in SourceFile.select()] == [HISTORY_COMMIT]


def test_the_commit_a_file_was_recorded_at_given_again_in_full_or_abbreviated_is_not_another(app, runner):
    """A file recorded at --commit a53675dd, given its full id again (or the reverse), was 'not recorded: the file was
    recorded at commit a53675dd, which it keeps', as if that were another commit."""
    small = str(DATA / "liger_small.csv")
    assert runner.invoke(args=["import", "liger", small, "--commit", HISTORY_COMMIT[:8]]).exit_code == 0
    for given in (HISTORY_COMMIT, HISTORY_COMMIT[:10], HISTORY_COMMIT[:7]):
        again = runner.invoke(args=["import", "liger", small, "--commit", given])
        assert again.exit_code == 0 and "created 0, unchanged 9" in again.output, again.output
        assert "commit" not in again.output.split("rejected 0")[-1], again.output
    other = runner.invoke(args=["import", "liger", small, "--commit", "a53675de"])
    assert f"commit a53675de not recorded: the file was recorded at commit {HISTORY_COMMIT[:8]}" in other.output


OLDER_COMMIT = "8e2f3a477871b3c72f3f054673edbd656497752d"


@pytest.mark.parametrize("older_first", [True, False], ids=["older-first", "newer-first"])
def test_a_run_names_the_earliest_file_holding_it_in_either_import_order(app, runner, client, tmp_path, older_first):
    """A history file repeats the rows of the files before it: imported newest first (as a folder sorts
    ``all_benchmark_data.csv`` before ``history/``), every run was dated by the newest file's commit."""
    header, *rows = (DATA / "liger_small.csv").read_text().splitlines(keepends=True)
    older, newer = tmp_path / "2024-10-01_8e2f3a47.csv", tmp_path / "2025-06-05_a53675dd.csv"
    older.write_text(header + "".join(rows[:4]))
    newer.write_text(header + "".join(rows))
    imports = [(older, OLDER_COMMIT), (newer, HISTORY_COMMIT)]
    outputs = []
    for path, commit in imports if older_first else imports[::-1]:
        result = runner.invoke(args=["import", "liger", str(path), "--commit", commit])
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert ("first published here 4" in outputs[-1]) is not older_first, outputs
    with app.app_context():
        named = {run.id: file_name(run.source_file) for run in Run.select()}
        created = {file_name(file): file.runs_created for file in SourceFile.select()}
    assert sorted(named.values()) == [older.name] * 4 + [newer.name] * 5
    assert created == ({older.name: 4, newer.name: 5} if older_first else {older.name: 0, newer.name: 9})
    for run_id, name in named.items():
        assert client.get(f"/runs/{run_id}.json").get_json()["footer"]["published"] == name[:10]
    again = runner.invoke(args=["import", "liger", str(newer), "--commit", HISTORY_COMMIT])
    assert "created 0, unchanged 9, superseded 0, rejected 0\n" in again.output, again.output


def test_without_a_known_commit_published_is_the_observed_day(small_app, client):
    with small_app.app_context():
        run = Run.select().first()
    assert client.get(f"/runs/{run.id}.json").get_json()["footer"]["published"] == run.observed_at.strftime("%Y-%m-%d")


def test_upstream_import_reads_the_pinned_raw_files_and_home_shows_the_commit(app, runner, client, monkeypatch):
    read = []
    monkeypatch.setattr(liger_csv, "read_location", lambda location, timeout, limit: read.append(location)
                        or (DATA / "liger_small.csv").read_bytes())
    result = runner.invoke(args=["import", "liger-upstream"])
    assert result.exit_code == 0, result.output
    assert read == [file.url for file in upstream.NEWEST_FILES]
    assert all(f"/{upstream.PINNED_COMMIT}/benchmark/data/" in url for url in read)
    assert "LIGER_DATA=" in result.output  # says what to pass when offline
    assert upstream.PINNED_COMMIT[:12] in client.get("/").get_data(as_text=True)


def test_upstream_import_goes_on_past_a_file_it_cannot_fetch_and_exits_non_zero(app, runner, monkeypatch):
    def read_location(location, timeout, limit):
        read.append(location)
        if location == upstream.NEWEST_FILES[0].url:
            raise ImportFailed(f"could not fetch {location}: HTTP Error 404: Not Found")
        return (DATA / "liger_small.csv").read_bytes()

    read = []
    monkeypatch.setattr(liger_csv, "read_location", read_location)
    result = runner.invoke(args=["import", "liger-upstream"])
    assert result.exit_code == 1, result.output
    assert read == [file.url for file in upstream.NEWEST_FILES]
    assert f"{upstream.NEWEST_FILES[0].url}: not imported, nothing changed: could not fetch" in result.output
    with app.app_context():
        assert Run.select().count() == 9


def test_one_byte_form_of_the_manifest(small_app, client):
    with small_app.app_context():
        run = Run.select().first()
    download = client.get(f"/runs/{run.id}/manifest.json").get_data()
    negotiated = client.get(f"/runs/{run.id}/manifest", headers={"Accept": "application/json"}).get_data()
    assert negotiated == download
