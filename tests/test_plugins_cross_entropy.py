"""The cross entropy plugins: every CPU implementation against float64, every upstream row."""

import json

import pytest
import torch

from app.importers.liger_csv import LigerCsvReader
from plugins.cross_entropy.definition import MODEL_VOCABULARIES
from plugins.cross_entropy.reference import FAMILY
from runners.discovery import family_definitions
from runners.rerun import RerunRequest, capture_environment, rerun_workload
from runners.timing import protocol_document

from .conftest import needs_compiled_cuda
from .family_support import check_every_upstream_row, rerun_every_cpu_implementation, upstream_rows


def test_every_cpu_implementation_matches_the_float64_reference():
    rerun_every_cpu_implementation("cross_entropy", {"tokens": 6, "vocab": 40}, "fp32", {})


def test_every_upstream_row_maps_to_a_workload_the_plugins_build():
    check_every_upstream_row(FAMILY, expected_rows=36)


def test_rows_that_name_a_model_take_its_vocabulary():
    """The model-config sweep of the CuTe DSL file names models, not vocabularies: each row still builds."""
    rows = [row for row in upstream_rows("cross_entropy", "all_benchmark_data_cutedsl.csv")
            if row["x_name"] == "model_config"]
    reader = LigerCsvReader(family_definitions())
    workloads = {}
    for row in rows:
        _, parameters, dtype, options = reader.normalize(row, json.loads(row["extra_benchmark_config_str"]),
                                                         row["x_value"])
        workloads[options["model_config"]] = (parameters, dtype)
    assert set(workloads) == set(MODEL_VOCABULARIES)
    assert workloads["llama_2_7b"] == ({"tokens": 2048, "vocab": 32000}, "fp32")


@needs_compiled_cuda
def test_a_cuda_rerun_counts_ligers_memory_as_upstream_published_it():
    """Upstream's A100 row: Liger's full pass on 16384 x 4096 fp32 logits peaks at 256.33 MB, the logits (256 MB)
    holding their own gradient. The figure does not depend on the GPU, so the rerun's must agree."""
    pytest.importorskip("liger_kernel")
    request = RerunRequest("cross_entropy", "full", {"tokens": 16384, "vocab": 4096}, "fp32")
    results = rerun_workload(request, target="cuda", implementations=["liger"],
                             protocol=protocol_document("smoke", "cuda"),
                             environment=capture_environment("cuda", "cuda:0"))
    [peak] = [result for result in results if result.metric == "memory"]
    assert peak.passed, peak.error
    assert peak.memory["median"] == pytest.approx(256.33, abs=2.0)
