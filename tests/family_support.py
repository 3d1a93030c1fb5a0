"""What the tests of formulated families share: every CPU implementation against float64, every upstream row.

Each family's test file calls :func:`rerun_every_cpu_implementation` on one tiny workload and
:func:`check_every_upstream_row` on its rows of ``../shared/data/liger/all_benchmark_data.csv`` (or
of the CSV that holds the family's rows, such as ``all_benchmark_data_cutile.csv`` for DyT).
"""

import csv
import dataclasses
import json
from types import MappingProxyType
from typing import Mapping

import pytest
import torch

from app.importers.liger_csv import LigerCsvReader, parse_number
from runners.discovery import family_definitions, get_registry
from runners.rerun import RerunRequest, _PluginCalls, capture_environment, rerun_workload
from runners.timing import protocol_document
from runners.types import PASSES, RerunResult

from .conftest import LIGER_DATA

UPSTREAM_CSV = "all_benchmark_data.csv"
SCALE_DOWN = 64
"""Upstream sizes are divided by this (at least 1 remains) to build a row's workload on a CI runner."""


def rerun_every_cpu_implementation(family: str, parameters, dtype: str, options) -> list[RerunResult]:
    """The full pass (output and every gradient) of every implementation the CPU plugin lists as available
    here, each judged against the family's float64 reference by the correctness policy; asserts each passed."""
    request = RerunRequest(family, "full", parameters, dtype, options)
    results = rerun_workload(request, target="cpu", environment=capture_environment("cpu", "cpu"),
                             protocol=protocol_document("smoke", "cpu"))
    available = [implementation.name for implementation in get_registry().find(family, "cpu").record.implementations
                 if not implementation.unavailable]
    assert [result.implementation.name for result in results] == available
    for result in results:
        assert result.passed, (result.implementation.name, result.error)
    return results


def upstream_rows(family: str, csv_name: str = UPSTREAM_CSV) -> list[dict]:
    path = LIGER_DATA / csv_name
    if not path.is_file():
        pytest.skip("../shared/data/liger is not present")
    with path.open(newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["kernel_name"] == family]


def check_every_upstream_row(formulated_family, expected_rows: int, csv_name: str = UPSTREAM_CSV,
                             providers_not_rerun: Mapping[str, str] = MappingProxyType({}),
                             minimum_sizes: Mapping[str, int] = MappingProxyType({}),
                             fixed_dtypes: Mapping[str, str] = MappingProxyType({})) -> None:
    """Every upstream row of the family normalizes (as the importer does) to a workload its plugins can run.

    Per row: the parameters are the definition's, the provider is an implementation the
    CUDA plugin can list (or one of ``providers_not_rerun``, each with the reason), the pass
    exists, the tensors (of the row's dtype, int64 indices, or the dtype ``fixed_dtypes`` names
    whatever the row's, as Llama 4's float32 frequencies) and the cost follow at full
    size, and each target's ``build_workload`` makes the definition's tensors at sizes
    divided by :data:`SCALE_DOWN`, each kept at least at its ``minimum_sizes`` entry (a size
    that must hold one group).
    """
    definition = formulated_family.definition
    rows = upstream_rows(definition.name, csv_name)
    assert len(rows) == expected_rows
    reader = LigerCsvReader(family_definitions())
    providers = {"torch", "torch_compile", *(comparator.name for comparator in formulated_family.comparators),
                 *providers_not_rerun}
    registry = get_registry()
    built = set()
    for row in rows:
        family, parameters, dtype, options = reader.normalize(row, json.loads(row["extra_benchmark_config_str"]),
                                                              parse_number(row["x_value"]))
        assert family is definition and set(parameters) == set(definition.parameters), row
        assert row["kernel_provider"] in providers and row["kernel_operation_mode"] in PASSES, row
        assert all(spec.dtype in (fixed_dtypes.get(spec.name, dtype), "int64")
                   for spec in definition.tensors({**parameters, **options}, dtype)), row
        scaled = {name: max(minimum_sizes.get(name, 1), value // SCALE_DOWN) for name, value in parameters.items()}
        key = json.dumps([scaled, dtype, options], sort_keys=True)
        for target in ("cpu", "cuda"):
            plugin = registry.find(definition.name, target)
            cost = registry.call(plugin, "workload_cost", parameters=parameters, dtype=dtype, options=options,
                                 pass_=row["kernel_operation_mode"])
            assert cost.flops >= 0 and cost.bytes > 0  # an embedding's forward only gathers: no FLOPs
            if (key, target) not in built:  # rows of one workload build it once per target
                request = RerunRequest(definition.name, row["kernel_operation_mode"], scaled, dtype, options)
                _PluginCalls(registry, plugin, request, "cpu").tensors(seed=0)  # checks names, shapes, dtypes
                built.add((key, target))


def check_reference_by_batch_element(family, pass_: str, parameters, options) -> None:
    """A family's float64 reference run one batch element at a time (its ``float64_by_batch_element``) gives the
    whole batch's outputs and gradients at once: the batched ones put together, the others summed."""
    assert family.float64_by_batch_element
    registry = get_registry()
    name = family.definition.name
    request = RerunRequest(name, pass_, parameters, "fp32", options)
    workload = _PluginCalls(registry, registry.find(name, "cpu"), request, "cpu").workload(3)
    by_element = family.reference_outputs(workload, pass_)
    whole = dataclasses.replace(family, float64_by_batch_element=()).reference_outputs(workload, pass_)
    assert sorted(by_element) == sorted(whole)
    for output, expected in whole.items():
        assert by_element[output].dtype == torch.float64 and by_element[output].shape == expected.shape, output
        torch.testing.assert_close(by_element[output], expected.detach(), rtol=1e-12, atol=1e-12)

