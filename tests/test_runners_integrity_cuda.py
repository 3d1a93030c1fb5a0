"""The CUDA-only cheats of ``tests/plugins/adversarial/integrity_cuda.py`` are caught on a GPU host; honest work is not.

Skipped without a GPU: run on an H200 with compiled kernels,
``TRITON_INTERPRET=0 python -m pytest -q -p no:cacheprovider tests/test_runners_integrity_cuda.py``.
"""

import re
from pathlib import Path

import pytest

from runners import discovery
from runners.rerun import RerunRequest, rerun_workload
from runners.timing import protocol_document
from tests.conftest import needs_compiled_cuda

pytestmark = needs_compiled_cuda
ADVERSARIAL = Path(__file__).resolve().parent / "plugins" / "adversarial"
REQUEST = RerunRequest("integrity_matmul", "forward", {"rows": 1024, "features": 1024}, "fp32")


@pytest.fixture(scope="module")
def results():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(discovery.PLUGINS_DIR_VARIABLE, str(ADVERSARIAL))
        found = rerun_workload(REQUEST, target="cuda", protocol=protocol_document("smoke", "cuda"))
    return {result.implementation.name: result.as_document() for result in found if result.metric == "speed"}


def test_the_honest_implementation_passes_every_check(results):
    honest = results["torch"]
    assert honest["status"] == "passed", honest["error"]
    assert honest["integrity"]["violations"] == []


@pytest.mark.parametrize("name, reason", [
    ("tf32_declared_fp32", r"^correctness: integrity violation: declares IEEE fp32 arithmetic, but its error"),
    ("tf32_when_timed", r"^audit: integrity violation: timed call \d+ of 12 returned a wrong output"),
    ("side_stream", r"integrity violation: .*(the timer saw|timed call \d+ .*(wrong output|NaN))"),
    ("persisting_l2", r"^(warm-up|timing trial 1): integrity violation: set aside \d+ bytes of persisting L2"),
])
def test_every_gpu_cheat_is_caught_and_its_result_invalid(results, name, reason):
    result = results[name]
    assert result["status"] == "failed" and result["integrity"]["violations"], result["error"]
    assert re.search(reason, result["error"]), result["error"]
