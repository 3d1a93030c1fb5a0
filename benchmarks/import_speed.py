"""Import speed of the Liger-Kernel importer on SQLite: prints a table of rows/s.

    python benchmarks/import_speed.py [LIGER_DATA_FOLDER]

Targets (issue 2, on a 2-core machine): the whole history in under 15 s; re-importing it
(nothing new) in under 5 s.
"""

import secrets
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app import create_app, db  # noqa: E402
from app.importers.liger_csv import import_file  # noqa: E402
from runners.discovery import family_definitions  # noqa: E402

# Served to the test client only: a throwaway secret and its default host.
IN_PROCESS = {"SECRET_KEY": secrets.token_urlsafe(32), "PUBLIC_URL": "http://localhost"}

DEFAULT_DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "liger"


def timed_import(files, families):
    started, rows = time.perf_counter(), 0
    for path in files:
        rows += import_file(str(path), families=families).read
    return rows, time.perf_counter() - started


def main():
    data = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA
    newest = [data / "all_benchmark_data.csv"]
    history = sorted((data / "history").glob("*.csv"))
    families = family_definitions()
    table = []
    with tempfile.TemporaryDirectory() as folder:
        for label, files in (("newest CSV", newest), ("whole history", history)):
            app = create_app({**IN_PROCESS, "DATABASE_URL": f"sqlite:///{folder}/{label.replace(' ', '_')}.sqlite3"})
            with app.app_context():
                db.database.connect(reuse_if_open=True)
                db.upgrade()
                rows, seconds = timed_import(files, families)
                table.append((label, len(files), rows, seconds))
                rows, seconds = timed_import(files, families)
                table.append((label + ", again", len(files), rows, seconds))
                db.database.close()
    print(f"{'import':<24}{'files':>6}{'rows':>8}{'seconds':>9}{'rows/s':>9}")
    for label, count, rows, seconds in table:
        print(f"{label:<24}{count:>6}{rows:>8}{seconds:>9.2f}{rows / seconds:>9.0f}")


if __name__ == "__main__":
    main()
