"""What a row of a Liger CSV must be before it becomes a run, and reading the file's records.

The checks refuse, for the row's line, whatever either database would refuse or keep
differently, so SQLite and PostgreSQL import exactly the same rows: a control character
(PostgreSQL refuses a NUL, SQLite keeps it), a cell longer than the column it is stored
in, a configuration nested deeper than a benchmark's ever is.
"""

import csv
import json
import math
import re
import sys

from runners.names import address_name_problem, name_problem

from ..inputs import RepeatedKey, control_character_in, describe, object_of
from ..models import Family, Run
from ..rerun_schemas import string_problem, value_problem
from . import ImportFailed

# Cells stored as they are, so no longer than their column: SQLite would keep a longer one, PostgreSQL refuse it.
CELL_COLUMNS = {"kernel_name": Family.name, "kernel_provider": Run.implementation, "kernel_operation_mode": Run.pass_,
                "metric_name": Run.metric, "metric_unit": Run.unit, "x_name": Run.x_name, "x_value": Run.x_value,
                "gpu_name": Run.gpu}
ADDRESS_COLUMNS = ("kernel_name", "kernel_provider", "kernel_operation_mode")  # segments of addresses and run ids
QUANTILES = ("50", "20", "80")  # the y_value columns: median, p20, p80
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number as upstream's CSV writer spells one: ASCII digits, no ``_`` (``float()`` also reads ``1_000`` and
Arabic-Indic or fullwidth digits, which no upstream row has)."""
MAX_CONFIG_DEPTH = 8  # upstream configurations are flat; a deeper one is not a benchmark configuration


class RowRejected(Exception):
    """A row that cannot become a run; it is reported with its line number."""


def parse_number(text: str):
    """``1024`` → 1024, ``0.5`` → 0.5, anything else (a model name) stays text."""
    if not DECIMAL.fullmatch(text):
        return text
    number = float(text)
    if not math.isfinite(number):
        return text
    return int(number) if number.is_integer() and "e" not in text.lower() else number


def check_cells(row: dict):
    """Refuse what either database would refuse or keep differently (a control character, an over-long cell) and
    names a page address or run id cannot hold, by the rule plugins and rerun bundles obey
    (:func:`runners.names.address_name_problem`: one more space would make another family or implementation), and a
    GPU name by the rule rerun results' GPUs obey (:func:`runners.names.name_problem`: a line break, tab or
    zero-width space inside would rank its runs apart, under a GPU that reads the same)."""
    for column, text in row.items():
        character = control_character_in(text or "")
        if character:
            raise RowRejected(f"{column} contains a control character ({describe(character)})")
    for column, field in CELL_COLUMNS.items():
        if len(row[column].strip()) > field.max_length:
            raise RowRejected(f"{column} is longer than {field.max_length} characters")
    for column in ADDRESS_COLUMNS:
        problem = address_name_problem(column, row[column], CELL_COLUMNS[column].max_length)
        if problem:
            raise RowRejected(problem)
    problem = name_problem("gpu_name", row["gpu_name"].strip(), CELL_COLUMNS["gpu_name"].max_length)
    if problem:
        raise RowRejected(problem)


def check_number(where: str, value) -> None:
    """Refuse a number canonical JSON cannot hold (the manifests' digests are of canonical JSON)."""
    problem = value_problem(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if problem:
        raise RowRejected(f"{where} is {problem}")


def parsed_config(text: str) -> dict:
    """``extra_benchmark_config_str`` as data: a JSON object, at most ``MAX_CONFIG_DEPTH`` deep, of plain text, each
    of its objects naming a key once (``json`` keeps a repeated key's last value, other readers its first: the row
    would be stored as one workload and read as another)."""
    try:
        config = json.loads(text, object_pairs_hook=object_of)
    except RepeatedKey as error:
        raise RowRejected(f"extra_benchmark_config_str names {error.args[0][:80]!r} twice") from None
    except json.JSONDecodeError as error:
        raise RowRejected(f"extra_benchmark_config_str is not JSON ({error.msg})") from error
    except RecursionError:
        raise RowRejected(f"extra_benchmark_config_str is nested deeper than {MAX_CONFIG_DEPTH} levels") from None
    except ValueError:  # json reads no integer of more digits than Python converts
        raise RowRejected("extra_benchmark_config_str holds an integer of more than "
                          f"{sys.get_int_max_str_digits()} digits") from None
    if not isinstance(config, dict):
        raise RowRejected("extra_benchmark_config_str is not a JSON object")
    level = [config]
    for _ in range(MAX_CONFIG_DEPTH):
        texts = [value for value in level if isinstance(value, str)]
        texts += [key for value in level if isinstance(value, dict) for key in value]
        character = next(filter(None, map(control_character_in, texts)), None)
        if character:
            raise RowRejected(f"extra_benchmark_config_str contains a control character ({describe(character)})")
        problem = next(filter(None, map(string_problem, texts)), None)
        if problem:  # a lone surrogate (a JSON escape), which no canonical document holds
            raise RowRejected(f"extra_benchmark_config_str contains {problem}")
        for value in level:
            check_number("a number in extra_benchmark_config_str", value)
        level = [item for value in level if isinstance(value, (dict, list))
                 for item in (value.values() if isinstance(value, dict) else value)]
        if not level:
            return config
    raise RowRejected(f"extra_benchmark_config_str is nested deeper than {MAX_CONFIG_DEPTH} levels")


def figures_of(row: dict) -> dict:
    """The row's 50th, 20th and 80th percentiles, each finite and non-negative, in order (as the rerun importer
    asks of its figures; no upstream row of any history version has them out of order)."""
    figures = {}
    for quantile in QUANTILES:
        text = row[f"y_value_{quantile}"]
        if not DECIMAL.fullmatch(text.strip()):
            raise RowRejected(f"y_value_{quantile} is not a number: {text!r}")
        figures[quantile] = float(text)
        if not math.isfinite(figures[quantile]) or figures[quantile] < 0:
            raise RowRejected(f"y_value_{quantile} is not a finite non-negative number: {text!r}")
    if not figures["20"] <= figures["50"] <= figures["80"]:
        raise RowRejected(f"y_value_20 <= y_value_50 <= y_value_80 does not hold: {figures['20']:g}, "
                          f"{figures['50']:g}, {figures['80']:g}")
    return figures


def csv_records(table):
    """The records of a ``csv.reader``; one it cannot read (a field over its limit) fails the file at its line."""
    while True:
        try:
            yield next(table)
        except StopIteration:
            return
        except csv.Error as error:
            raise ImportFailed(f"line {table.line_num}: {error}") from error
