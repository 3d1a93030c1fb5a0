"""``benchmarks/h200_reruns.sh`` names upstream rows by run id: each must still be a run of the imported CSVs.

Run ids are digests of what the importer makes of a row, so a change to a family's parameters (an option moved
out of the workload, say) gives its rows new ids; six of the script's ids went stale that way and an H200 call
found out, one missing id at a time.
"""

import re
from pathlib import Path

from app.models import Run

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "h200_reruns.sh"


def script_run_ids() -> set[str]:
    """Every twelve-hex-digit word of the script's shell variables, comments left out."""
    code = "\n".join(line.split("#", 1)[0] for line in SCRIPT.read_text().splitlines())
    return set(re.findall(r"\b[0-9a-f]{12}\b", code))


def test_every_run_the_script_reruns_is_an_imported_speed_run(liger_app):
    wanted = script_run_ids()
    assert len(wanted) > 50
    with liger_app.app_context():
        found = {run.id: run for run in Run.select().where(Run.id.in_(sorted(wanted)))}
    assert sorted(wanted - set(found)) == []
    assert sorted(run_id for run_id, run in found.items() if run.metric != "speed") == []
