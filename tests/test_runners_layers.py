"""Data flows one way: ``runners/`` and ``plugins/`` import nothing from the app, its web framework or its
database, so a GPU host that only measures needs none of them."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
HOST_ONLY = ("app", "flask", "peewee")

RERUN_WITHOUT_THE_APP = f"""
import sys


class HostOnlyBlocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HOST_ONLY!r}:
            raise ModuleNotFoundError(f"{{name}} is not installed on this GPU host", name=name)


sys.meta_path.insert(0, HostOnlyBlocker())
for name in {HOST_ONLY!r}:
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit(f"the blocker let {{name}} through")

from runners.rerun import RerunRequest, rerun_workload
from runners.timing import protocol_document

request = RerunRequest("toy_linear", "full", {{"rows": 8, "features": 4}}, "fp32", {{"bias": True}},
                       rerun_of={{"torch": "0123456789ab"}})
[result] = rerun_workload(request, target="cpu", protocol=protocol_document("smoke", "cpu"))
loaded = sorted(name for name in sys.modules if name.split(".")[0] in {HOST_ONLY!r})
assert not loaded, loaded
print(result.bundle_line())
"""


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every absolute import in a module, at any depth (function-level included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", ["runners", "plugins"])
def test_harness_and_plugins_import_nothing_of_the_host(package):
    offenders = {str(path.relative_to(REPOSITORY)): sorted(imported_modules(path) & set(HOST_ONLY))
                 for path in sorted((REPOSITORY / package).rglob("*.py"))}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_a_cpu_rerun_runs_to_a_bundle_line_without_the_app_flask_or_peewee():
    environment = {**os.environ, "KERNELINDEX_PLUGINS_DIR": str(REPOSITORY / "tests" / "plugins")}
    completed = subprocess.run([sys.executable, "-c", RERUN_WITHOUT_THE_APP], cwd=REPOSITORY, env=environment,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    assert (result["family"], result["pass"], result["status"], result["rerunOf"]) == \
        ("toy_linear", "full", "passed", "0123456789ab")
    assert result["timing"]["median"] > 0 and result["correctness"]["passed"]
