"""The family page's chart: one configuration of the selected runs, median against the swept parameter.

When the selection holds several configurations (the parameters not swept), the chart draws
the most common one; fixing parameters in the filters chooses another.
"""

from .. import charts, comparison
from .family_query import config_text, x_order
from .titles import implementation_title, metric_name


def chart_configuration(rows: list) -> tuple[tuple, int]:
    """The most common configuration among ``rows`` and how many configurations there are."""
    counts = {}
    for row in rows:
        counts[row["config"]] = counts.get(row["config"], 0) + 1
    return (max(counts, key=lambda c: (counts[c], c)) if counts else ()), len(counts)


def line_label(row: dict) -> str:
    """A line per implementation, KernelIndex reruns apart from the source's figures."""
    label = implementation_title(row["implementation"])
    if comparison.EVIDENCE_KIND.get(row["evidence"]) == comparison.KERNELINDEX:
        label += " (KernelIndex rerun)"
    return label


def grouped(rows: list, key) -> dict:
    groups = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def family_chart(title: str, selected: list, *, unit: str, x_name: str, metric: str) -> dict:
    """The chart's geometry, the configuration it draws, and its points per implementation (for the twin)."""
    config, configurations = chart_configuration(selected)
    chart_rows = sorted((row for row in selected if row["config"] == config and row["median"] is not None),
                        key=lambda row: (x_order(row), row["x_value"]))
    by_implementation = grouped(chart_rows, lambda row: row["implementation"])
    return {
        "chart": charts.line_chart(grouped(chart_rows, line_label), x_name=x_name, unit=unit,
                                   title=f"{title}: median {metric_name(unit, metric)} against {x_name}"),
        "chart_config": config_text(config),
        "chart_config_chosen": configurations > 1,
        "series": [{"label": label, "points": points} for label, points in sorted(by_implementation.items())],
        "unit": chart_rows[0]["unit"] if chart_rows else "",
    }
