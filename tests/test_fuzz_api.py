"""A short schemathesis pass over the OpenAPI document (``benchmarks/fuzz_api.sh``), on the suite's database.

CI's two ``make test`` runs make it one pass on SQLite and one on PostgreSQL: the script serves
the app on loopback over a fresh database of that kind holding tests/data/liger_small.csv, with
a rerun-host token, and fails on any server error, schema violation or server traceback.
"""

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TESTS, fresh_database_url

SCRIPT = TESTS.parent / "benchmarks" / "fuzz_api.sh"


def schemathesis_command() -> str | None:
    """``st`` beside this interpreter (the test extras install it there), else on PATH."""
    beside = Path(sys.executable).parent / "st"
    return str(beside) if beside.exists() else shutil.which("st")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_short_schemathesis_pass_finds_nothing(tmp_path):
    st = schemathesis_command()
    if st is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[test]')")
    environment = {**os.environ, "PYTHON": sys.executable, "ST": st, "PORT": str(free_port()),
                   "MAX_EXAMPLES": "10", "MAX_TIME": "45", "FUZZ_DATABASE_URL": fresh_database_url("ki_fuzz", tmp_path)}
    result = subprocess.run(["bash", str(SCRIPT)], env=environment, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "server log: 0 tracebacks" in output and " passed" in output, output[-3000:]
