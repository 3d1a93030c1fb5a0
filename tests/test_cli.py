"""The flask CLI: database, maintainers and rerun-host tokens."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app import create_app, db
from app.models import HostToken, Maintainer
from app.security import ConfigurationError

from .conftest import POSTGRES, fresh_database_url, import_lock_held_elsewhere, make_app

REPOSITORY = Path(__file__).resolve().parents[1]
UPGRADE_IN_A_FRESH_PROCESS = """
import sys
from app import create_app

app = create_app({"TESTING": True, "DATABASE_URL": sys.argv[1], "SECRET_KEY": "test"})
result = app.test_cli_runner().invoke(args=["db", "upgrade"])
assert result.exit_code == 0, result.output
print("torch" in sys.modules, "plugins.rms_norm.cpu" in sys.modules)
"""


def test_db_upgrade_is_idempotent(runner):
    result = runner.invoke(args=["db", "upgrade"])
    assert result.exit_code == 0 and "applied 0 migration(s)" in result.output


def test_db_upgrade_discovers_no_plugins(tmp_path):
    """Discovery imports torch (seconds); a command that needs no plugin must not pay for it."""
    done = subprocess.run([sys.executable, "-c", UPGRADE_IN_A_FRESH_PROCESS, f"sqlite:///{tmp_path / 'db.sqlite3'}"],
                          cwd=REPOSITORY, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_help_shows_no_markup(app, runner):
    """A command's docstring is its --help, shown as written: ``flask import kernelindex --help`` showed the reST
    backquotes round ``flask rerun --out``."""
    from app.cli import COMMANDS

    def paths(command, prefix=()):
        yield [*prefix, command.name]
        for sub in getattr(command, "commands", {}).values():
            yield from paths(sub, (*prefix, command.name))

    every = [path for command in COMMANDS for path in paths(command)]
    assert ["import", "kernelindex"] in every and ["tokens", "revoke"] in every
    for path in every:
        shown = runner.invoke(args=[*path, "--help"])
        assert shown.exit_code == 0 and "``" not in shown.output, (path, shown.output)


def test_tokens_are_shown_once_and_stored_hashed(app, runner):
    created = runner.invoke(args=["tokens", "create", "h200-a"])
    token = created.output.strip()
    assert created.exit_code == 0 and token.startswith("kih_")
    with app.app_context():
        stored = HostToken.get(HostToken.name == "h200-a")
        assert stored.token_hash != token and stored.token_hash == HostToken.hash(token)
        assert HostToken.find_active(token) == stored
    listed = runner.invoke(args=["tokens", "list"])
    assert "h200-a\tactive" in listed.output and token not in listed.output
    assert listed.output.strip().endswith("\th200-a\tany GPU\tposts results")  # the host defaults to the name
    assert runner.invoke(args=["tokens", "create", "h200-a"]).exit_code != 0
    assert runner.invoke(args=["tokens", "revoke", "h200-a"]).exit_code == 0
    with app.app_context():
        assert HostToken.find_active(token) is None
    again = runner.invoke(args=["tokens", "revoke", "h200-a"])
    assert again.exit_code == 1 and "'h200-a' was revoked already" in again.output
    assert runner.invoke(args=["tokens", "revoke", "nobody"]).exit_code != 0


def test_a_token_is_issued_to_one_host_and_optionally_some_gpus(app, runner):
    created = runner.invoke(args=["tokens", "create", "rack-7", "--host", "h200-a", "--gpu", "NVIDIA H200",
                                  "--gpu", "NVIDIA H100", "--gpu", "NVIDIA H200"])
    assert created.exit_code == 0, created.output
    assert created.stdout.startswith("kih_") and created.stderr.count("note: no run in the index is on") == 2
    with app.app_context():
        stored = HostToken.get(HostToken.name == "rack-7")
        assert (stored.host, stored.gpus) == ("h200-a", ["NVIDIA H200", "NVIDIA H100"])  # each kind once
    assert "rack-7\tactive" in runner.invoke(args=["tokens", "list"]).output
    asking = runner.invoke(args=["tokens", "create", "scheduler", "--may-request"])
    with app.app_context():
        assert HostToken.find_active(asking.output.strip()).may_request
    assert "\tmay ask for reruns" in runner.invoke(args=["tokens", "list"]).output
    too_long = runner.invoke(args=["tokens", "create", "x", "--host", "h" * 121])
    assert too_long.exit_code == 2 and "printable" in too_long.output


def test_a_token_for_a_gpu_the_index_knows_gets_no_note(small_app, runner):
    """The note is for a name no run reports (likely a typo); a GPU with runs is taken as it is."""
    created = runner.invoke(args=["tokens", "create", "rack-9",
                                  "--gpu", "NVIDIA H100 80GB HBM3", "--gpu", "NVIDA H100"])
    assert created.exit_code == 0, created.output
    assert created.stderr.strip() == "note: no run in the index is on 'NVIDA H100'; the token posts results only " \
                                     "for a GPU reported exactly so"


@pytest.mark.parametrize("model, command, refusal", [
    ("HostToken", ["tokens", "create", "twin"], "a token named 'twin' already exists"),
    ("Maintainer", ["users", "create", "twin", "--password", "correct horse battery staple"],
     "maintainer 'twin' already exists"),
])
def test_a_name_created_twice_at_once_is_refused_cleanly(app, runner, monkeypatch, model, command, refusal):
    """Two creations of one name racing: the one whose insert loses sees the unique name, not a traceback."""
    from app import models

    monkeypatch.setattr(getattr(models, model), "get_or_none", classmethod(lambda cls, *args: None))
    assert runner.invoke(args=command).exit_code == 0  # both checked before either wrote
    second = runner.invoke(args=command)
    assert second.exit_code == 1 and refusal in second.output, second.output
    assert second.exception is None or isinstance(second.exception, SystemExit)


def test_maintainer_accounts(app, runner):
    result = runner.invoke(args=["users", "create", "ada"], input="s3cret-passphrase\ns3cret-passphrase\n")
    assert result.exit_code == 0, result.output
    with app.app_context():
        user = Maintainer.get(Maintainer.username == "ada")
        assert user.password_hash != "s3cret-passphrase" and user.password_hash.startswith(("scrypt:", "pbkdf2:"))
    again = runner.invoke(args=["users", "create", "ada"], input="x\nx\n")
    assert again.exit_code != 0 and "already exists" in again.output
    for look_alike in ("Ada", "ADA", "\uff41\uff44\uff41"):  # pages name who invalidated: no second "ada"
        refused = runner.invoke(args=["users", "create", look_alike, "--password", "another-passphrase"])
        assert refused.exit_code == 1 and "would read as the existing 'ada'" in refused.output, refused.output
    with app.app_context():
        assert [user.username for user in Maintainer.select()] == ["ada"]


@pytest.mark.parametrize("arguments, message", [
    (["users", "create", " ada", "--password", "s3cret-passphrase"], "a username is 1 to 80 printable characters"),
    (["users", "create", "ada\nlovelace", "--password", "s3cret-passphrase"], "with no white space at either end"),
    (["users", "create", "a" * 81, "--password", "s3cret-passphrase"], "1 to 80"),
    (["users", "create", "ada", "--password", "s3cret-pass\nphrase"], "printable characters on one line"),
    (["tokens", "create", ""], "a token's name is 1 to 80 printable characters"),
    (["tokens", "create", "rack-8", "--host", ""], "a host is 1 to 120 printable characters"),
    (["tokens", "create", "rack-8", "--gpu", ""], "a GPU is 1 to 120 printable characters"),
    (["tokens", "create", "rack-8", "--gpu", "NVIDIA H200 "], "no white space at either end"),
    (["tokens", "create", "rack-8", "--gpu", "NVIDIA Ge\u0301Force"], "a GPU is written in Unicode's composed form"),
    (["rejudge", "--kernel", "no_such_family"], "no family named 'no_such_family' here"),
    # bytes that are not UTF-8 (``$'\\xff'``) reach Python as a lone surrogate, which no database takes
    (["tokens", "revoke", "\udcff"], "a token's name is 1 to 80 printable characters"),
    (["invalidate", "\udcff", "--reason", "x", "--by", "m"], "a run id is 1 to 16 printable characters"),
    (["invalidate", "abc", "--reason", "x", "--by", "\udcff"], "a username is 1 to 80 printable characters"),
    (["reinstate", "\udcff", "--reason", "x", "--by", "m"], "a run id is 1 to 16 printable characters"),
    (["reinstate", "abc", "--reason", "x", "--by", "\udcff"], "a username is 1 to 80 printable characters"),
    (["rejudge", "\udcff"], "a run id is 1 to 16 printable characters"),
    (["rejudge", "--kernel", "\udcff"], "a family is 1 to 120 printable characters"),
    (["users", "create", "\udcff", "--password", "s3cret-passphrase"], "a username is 1 to 80 printable"),
    (["worker", "--target", "cpu", "--gpus", "abc"], "a CPU worker serves no GPU"),
    (["worker", "--target", "cpu", "--server", "notaurl", "--token", "t"], "--server must be an http:// or https://"),
])
def test_names_and_arguments_that_cannot_work_are_refused(app, runner, arguments, message):
    result = runner.invoke(args=arguments)
    assert result.exit_code in (1, 2) and message in result.output, result.output
    with app.app_context():
        assert Maintainer.select().count() == 0 and HostToken.select().count() == 0


@pytest.mark.parametrize("url, message", [
    ("sqlite:////nonexistent-folder/kernelindex.sqlite3", "could not open the database"),
    ("postgresql://kernelindex:secret@127.0.0.1:9/kernelindex", "could not open the database"),
    ("file-that-is-no-database", "cannot be read: file is not a database"),
])
def test_db_upgrade_says_why_it_cannot_reach_the_database(tmp_path, url, message):
    if url == "file-that-is-no-database":
        (tmp_path / "garbage.db").write_text("not a database\n" * 100)
        url = f"sqlite:///{tmp_path / 'garbage.db'}"
    result = create_app({"TESTING": True, "DATABASE_URL": url, "SECRET_KEY": "test"}).test_cli_runner().invoke(
        args=["db", "upgrade"])
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1, result.output  # PostgreSQL's driver writes two lines


def test_db_upgrade_refuses_a_database_a_newer_version_migrated(app, runner):
    with app.app_context():
        db.database.obj.execute_sql("INSERT INTO migratehistory (name, migrated_at) VALUES ('099_from_the_future', "
                                    "CURRENT_TIMESTAMP)")
    result = runner.invoke(args=["db", "upgrade"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "migrated by a newer KernelIndex (099_from_the_future are not in this version's migrations/)" in (
        result.output)


def test_other_commands_name_a_newer_migration_or_a_busy_database_too(app, runner, tmp_path):
    """A command failing on a database a newer version migrated says so; one failing on a database another process
    holds says it is busy (not "not set up", which it is not)."""
    import sqlite3

    with app.app_context():
        db.database.obj.execute_sql("DROP TABLE host_token")  # as a newer version might have changed it
        db.database.obj.execute_sql("INSERT INTO migratehistory (name, migrated_at) VALUES ('099_from_the_future', "
                                    "CURRENT_TIMESTAMP)")
    newer = runner.invoke(args=["tokens", "list"])
    assert newer.exit_code == 1 and "migrated by a newer KernelIndex (099_from_the_future" in newer.output
    assert "Traceback" not in newer.output

    path = tmp_path / "held.sqlite3"
    held_app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}", "SECRET_KEY": "test",
                           "SQLITE_BUSY_TIMEOUT_SECONDS": 0.2})
    assert held_app.test_cli_runner().invoke(args=["db", "upgrade"]).exit_code == 0
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        busy = held_app.test_cli_runner().invoke(args=["tokens", "create", "h200-a"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert busy.exit_code == 1 and "The database is busy; nothing was changed" in busy.output, busy.output
    assert "Traceback" not in busy.output


@pytest.mark.parametrize("command", ["invalidate", "reinstate"])
def test_a_decision_on_a_database_that_stays_busy_ends_in_one_line(tmp_path, command):
    """A write retried while the database is busy (``app.locks.retried``) gives up with DatabaseBusy, which is no
    database error: it ended ``flask invalidate`` and ``flask reinstate`` in a traceback."""
    import sqlite3

    path = tmp_path / "held.sqlite3"
    held_app = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}", "SECRET_KEY": "test",
                           "SQLITE_BUSY_TIMEOUT_SECONDS": 0.1})
    runner = held_app.test_cli_runner()
    assert runner.invoke(args=["db", "upgrade"]).exit_code == 0
    assert runner.invoke(args=["users", "create", "ada", "--password", "s3cret-passphrase"]).exit_code == 0
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # readers go on (WAL); every write waits
    try:
        busy = runner.invoke(args=[command, "abc", "--reason", "a reason", "--by", "ada"])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert busy.exit_code == 1 and busy.output == (
        "Error: The database is busy; nothing was changed. Please try again in a moment.\n"), busy.output


def test_a_command_the_database_refuses_to_write_for_says_so(tmp_path):
    """A database this host may read but not write (a file or folder mounted read-only, a standby server) ended
    every write in a traceback: it passed the checks that it opens and is migrated."""
    url = fresh_database_url("ki_read_only", tmp_path, migrated=True)
    read_only = make_app(url)
    with read_only.app_context():  # every connection from now on
        if POSTGRES:
            db.database.execute_sql(f'ALTER DATABASE "{url.rsplit("/", 1)[1]}" SET default_transaction_read_only = on')
            db.database.close_all()
        else:
            db.database.pragma("query_only", 1, permanent=True)
    runner = read_only.test_cli_runner()
    for arguments in (["tokens", "create", "h200-a"], ["users", "create", "ada", "--password", "s3cret-passphrase"]):
        result = runner.invoke(args=arguments)
        assert result.exit_code == 1, result.output
        assert result.output.startswith("Error: the database (KERNELINDEX_DATABASE_URL) refuses this command: ") and (
            "read-only" in result.output or "readonly" in result.output), result.output
        assert len(result.output.splitlines()) == 1, result.output
    assert runner.invoke(args=["tokens", "list"]).exit_code == 0  # reading it is fine


def test_db_upgrade_waits_for_a_running_upgrade_or_import(app, runner):
    """Two upgrades at once both applied the pending migrations; the second now waits, then gives up saying why."""
    app.config["IMPORT_LOCK_WAIT_SECONDS"] = 0.5
    with import_lock_held_elsewhere(app):
        result = runner.invoke(args=["db", "upgrade"])
    assert result.exit_code == 1 and "not upgraded: another upgrade or import still holds the database" in (
        result.output)
    assert runner.invoke(args=["db", "upgrade"]).exit_code == 0


def test_an_unknown_database_scheme_stops_the_app_at_start():
    with pytest.raises(ConfigurationError, match="names a 'mysql' database"):
        create_app({"TESTING": True, "DATABASE_URL": "mysql://user@host/db", "SECRET_KEY": "test"})


@pytest.mark.parametrize("url", ["postgresql://kernelindex:pa/ss@db.example/kernelindex",
                                 "postgresql://kernelindex@db.example:70000/kernelindex"])
def test_a_database_url_with_no_port_where_its_port_goes_stops_the_app_at_start(url):
    """Such a URL stopped the app with urllib's ValueError, which quotes what stands where the port goes."""
    with pytest.raises(ConfigurationError, match="KERNELINDEX_DATABASE_URL's port is not a number") as refused:
        create_app({"TESTING": True, "DATABASE_URL": url, "SECRET_KEY": "test"})
    assert "pa/ss" not in str(refused.value) and "'pa'" not in str(refused.value)


@pytest.mark.parametrize("url, message", [
    ("sqlite:////tmp/ki.sqlite3?foo=bar", "for SQLite is a path alone"),  # sqlite3.connect's keywords: a TypeError
    ("sqlite:////tmp/ki.sqlite3?timeout=5", "for SQLite is a path alone"),
    ("sqlite://", "in-memory SQLite database"),  # `flask db upgrade` applied migrations that vanished with it
    ("sqlite:///:memory:", "in-memory SQLite database"),
    ("sqlite:///kernelindex.sqlite3", "names a relative path"),  # another database in each folder a command runs in
    ("sqlite:///instance/kernelindex.sqlite3", "names a relative path"),
])
def test_a_sqlite_url_that_names_no_file_by_its_absolute_path_alone_stops_the_app_at_start(url, message):
    with pytest.raises(ConfigurationError, match=message):
        create_app({"TESTING": True, "DATABASE_URL": url, "SECRET_KEY": "test"})


@pytest.mark.parametrize("name, default", [("DATABASE_URL", "SQLite in the instance folder"),
                                           ("QUEUE_URL", "the embedded queue")])
def test_a_database_or_queue_url_set_but_empty_stops_the_app_at_start(tmp_path, name, default):
    """``KERNELINDEX_DATABASE_URL=$DB`` with DB unset wrote into the instance folder's database without a word."""
    with pytest.raises(ConfigurationError, match=f"KERNELINDEX_{name} is set but empty: unset it for the default "
                                                 f"\\({default}\\), or name one"):
        create_app({"TESTING": True, "SECRET_KEY": "test", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
                    name: ""})


def test_a_refused_configuration_ends_the_command_line_in_its_reason_not_a_traceback():
    """``flask --app wsgi`` makes the app before any command runs, so its refusal came as a traceback."""
    environment = {**os.environ, "KERNELINDEX_DATABASE_URL": "mysql://user@host/db",
                   "KERNELINDEX_SECRET_KEY": "k" * 40, "KERNELINDEX_PUBLIC_URL": "http://localhost"}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "tokens", "list"], cwd=REPOSITORY,
                          env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("Error: KernelIndex will not start:\n  - KERNELINDEX_DATABASE_URL names a 'mysql'")


def test_help_without_the_secret_stops_with_the_reason_as_every_command_does():
    """``flask --app wsgi --help``, a newcomer's first command, printed a traceback, then flask's help without a
    KernelIndex command in it, and exited 0: flask lists commands by making the app and shows any error but its own
    as a traceback."""
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("KERNELINDEX_SECRET_KEY", "KERNELINDEX_PUBLIC_URL")}
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "--help"], cwd=REPOSITORY,
                          env=environment, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("Error: KernelIndex will not start:\n  - KERNELINDEX_SECRET_KEY is missing")
    assert "KERNELINDEX_PUBLIC_URL is not set" in done.stderr and done.stdout == ""


@pytest.mark.parametrize("arguments", [["tokens", "list"], ["tokens", "create", "h200-a"], ["rejudge"],
                                       ["invalidate", "abc", "--reason", "gamed", "--by", "ada"],
                                       ["reinstate", "abc", "--reason", "a mistake", "--by", "ada"],
                                       ["import", "liger", str(REPOSITORY / "tests" / "data" / "liger_small.csv")],
                                       ["worker", "--target", "cpu"]])
@pytest.mark.parametrize("database, message", [
    ("missing-folder", "could not open the database (KERNELINDEX_DATABASE_URL)"),
    ("garbage", "the database (KERNELINDEX_DATABASE_URL) cannot be read: file is not a database"),
    ("fresh", "migration(s) to apply): run `flask db upgrade`"),
])
def test_commands_say_what_is_wrong_with_the_database_in_one_line(tmp_path, arguments, database, message):
    path = {"missing-folder": tmp_path / "no-such-folder" / "db.sqlite3", "garbage": tmp_path / "garbage.db",
            "fresh": tmp_path / "fresh.sqlite3"}[database]
    if database == "garbage":
        path.write_text("not a database\n" * 100)
    result = create_app({"TESTING": True, "DATABASE_URL": f"sqlite:///{path}", "SECRET_KEY": "test"}).test_cli_runner(
        ).invoke(args=arguments)
    assert result.exit_code == 1 and message in result.output and "Traceback" not in result.output, result.output
